"""The sweep as a pure pipeline: labeled files -> training set -> evaluations -> the champion's choice -> the
refit prediction artifact. No MLflow and no printing here: each step returns what it found (with
:class:`~papertrack.training.planning.Note`s for the user); :mod:`papertrack.training.sweep` runs the steps,
:mod:`papertrack.training.sweep_logging` logs them to MLflow and :mod:`papertrack.training.report` prints them.

Candidates of every family compete in one sweep: TF-IDF ones, sentence-embedding ones (when the ``embeddings``
extra is installed) and ensembles. Before cross-validation, every abstract is embedded once (on-disk cache);
ensembles are then evaluated on their members' out-of-fold probabilities (weights chosen with nested
cross-validation, see :mod:`papertrack.training.ensemble_weights`), without refitting any member."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from papertrack.models.artifact import TrackPredictor
from papertrack.models.candidates import Candidate
from papertrack.models.card import ModelCard
from papertrack.models.drift import build_profile
from papertrack.registry import ranking_metrics
from papertrack.training import artifact_extras, preflight, promotion
from papertrack.training.champion import ChampionChoice, Contender, choose_champion
from papertrack.training.config import SweepConfig
from papertrack.training.cv import check_trainable, fold_indices
from papertrack.training.data import Direction, TrainingSet, one_year_only
from papertrack.training.dataset import load_dataset
from papertrack.training.evaluation import (
    SHIFT_METRICS,
    CandidateResult,
    Listener,
    ShiftResult,
    cv_metrics,
    evaluate_candidates,
    shift_metrics,
    temporal_metrics,
)
from papertrack.training.planning import Holdouts, Note
from papertrack.training.renames import RenameMap
from papertrack.training.scoring import evaluate


@dataclass
class Prepared:
    """The training set of a sweep and what to say about it."""

    records: list
    data: TrainingSet
    renames: RenameMap
    counts: dict[str, int]  # records per source
    notes: list[Note] = field(default_factory=list)


@dataclass
class Embedded:
    """Every abstract embedded by one backend ahead of cross-validation."""

    backend: str
    encoded: int  # abstracts the model had to encode (0 with a warm cache)
    total: int
    seconds: float
    where: str  # the cache's folder, or "no disk cache"


@dataclass
class Refit:
    predictor: TrackPredictor
    confidence: object  # the calibration attached to the predictor (models/confidence.py)


def read(config: SweepConfig):
    """(records, summary) of the labeled files; the summary says what was skipped and why."""
    return load_dataset(
        [str(p) for p in config.paths], config.fmt, labeled=True, accept_suggested=config.accept_suggested
    )


def prepare(config: SweepConfig, records: list) -> Prepared:
    """Check that the records can be trained on (labels, memory) and make the training set (renames applied)."""
    files = [str(p) for p in config.paths]
    rename_map = RenameMap.with_extra(config.renames)
    check_trainable([rename_map.apply(r.label) for r in records], config.folds, files)
    preflight.check(records, files, jobs=config.n_jobs)  # labels that cannot fit in memory: refuse
    data = TrainingSet.from_records(records, use_title=config.use_title, renames=rename_map)
    sources = data.label_distribution()
    counts = {name: int(sources[name].sum()) for name in data.source_names}
    years = {name: sorted(set(data.years[data.sources == name].tolist())) for name in data.source_names}
    notes = [
        Note(
            "sources: "
            + ", ".join(
                f"{name} {n:,} records"
                + (
                    f" ({'/'.join(map(str, years[name]))})"
                    if years[name] != [-1] and str(years[name][0]) not in name
                    else ""
                )
                for name, n in counts.items()
            )
        )
    ]
    used_renames = rename_map.used(r.label for r in records)
    if used_renames:
        renamed = sum(r.label in used_renames for r in records)
        notes.append(
            Note(
                "renamed tracks (the latest name is taught): "
                + "; ".join(f"{old} -> {new}" for old, new in used_renames.items())
                + f" ({renamed:,} records)"
            )
        )
    for year, labels in one_year_only(data).items():
        shown = ", ".join(labels[:6]) + (f", … ({len(labels) - 6} more)" if len(labels) > 6 else "")
        notes.append(Note(f"{len(labels)} label(s) only in {year}: {shown}", "detail"))
    return Prepared(records, data, rename_map, counts, notes)


def majority_baseline(
    data: TrainingSet, directions: Sequence[Direction] = (), temporal: Direction | None = None
) -> dict[str, float]:
    """Metrics of always answering the label frequencies of the training set (on a holdout: of each
    direction's training side)."""
    prior = np.bincount(data.y, minlength=data.space.n_labels) / len(data.y)
    metrics = cv_metrics(evaluate(np.tile(prior, (len(data.y), 1)), data.y, data.space))

    def holdout(ds: Sequence[Direction]) -> ShiftResult:
        proba = np.zeros((len(data.y), data.space.n_labels))
        per_direction = {}
        for d in ds:
            proba[d.test] = np.bincount(data.y[d.train], minlength=data.space.n_labels) / len(d.train)
            m = evaluate(proba[d.test], data.y[d.test], data.space)
            per_direction[d.name] = {k: m[k] for k in SHIFT_METRICS}
        return ShiftResult(proba, per_direction, 0.0)

    if temporal is not None:
        metrics.update(temporal_metrics(holdout([temporal])))
    if directions:
        metrics.update(shift_metrics(holdout(directions)))
    return metrics


def warm_embeddings(
    candidates: Sequence[Candidate], data: TrainingSet, seed: int, progress_console=None
) -> list[Embedded]:
    """Embed every abstract once (cache misses only) before cross-validation, so that no fold waits for the
    embedding model; with ``progress_console`` (the caller's), the embedder draws its progress bar on it."""
    from papertrack.features.embeddings import embedding_steps, get_embedder

    backends: dict[str, object] = {}
    for candidate in candidates:
        if candidate.is_ensemble:
            continue
        for step in embedding_steps(candidate.build(data.space.n_labels, seed)):
            backends.setdefault(step.backend, step)
    done = []
    for backend, step in backends.items():
        embedder = get_embedder(backend)
        started = time.perf_counter()
        texts = step.warm(data.texts, progress=progress_console is not None, console=progress_console)
        where = str(embedder.cache.path) if embedder.cache else "no disk cache"
        done.append(Embedded(backend, texts, len(data.texts), time.perf_counter() - started, where))
    return done


def evaluate_all(
    candidates: Sequence[Candidate],
    data: TrainingSet,
    holdouts: Holdouts,
    config: SweepConfig,
    listener: Listener | None = None,
) -> list[CandidateResult]:
    """Every candidate cross-validated (stratified folds, fixed seed) and scored on the holdouts."""
    split = fold_indices(data.y, data.space, config.folds, config.seed)
    return evaluate_candidates(
        candidates, data, split, config.seed, listener, holdouts.directions, holdouts.temporal, config.n_jobs
    )


def choose(results: Sequence[CandidateResult]) -> ChampionChoice:
    """The champion rule (:mod:`papertrack.training.champion`) on the sweep's held-out rows."""
    primary, _ = ranking_metrics(*[r.metrics for r in results])
    return choose_champion([contender(r, results) for r in results], primary)


def contender(result: CandidateResult, among: Sequence[CandidateResult] = ()) -> Contender:
    """A candidate's result as the champion rule sees it (ranked by the metric ``among`` all share)."""
    primary, tiebreak = ranking_metrics(*[r.metrics for r in (among or [result])])
    return Contender(
        result.candidate.name,
        result.metrics[primary],
        result.metrics[tiebreak],
        result.metrics[promotion.COST_METRIC],
        result.selection_hits(3),
        baseline=result.candidate.family == "baseline",
    )


def refit(winner: CandidateResult, data: TrainingSet, seed: int, use_title: bool) -> Refit:
    """The winner fitted on all data, as the prediction artifact: the model card, the confidence calibration
    (on the held-out rows the winner was chosen on), the neighbour index and the drift profile."""
    classifier = winner.candidate.build(data.space.n_labels, seed).fit(data.texts, data.y)
    card = ModelCard(
        candidate=winner.candidate.name,
        family=winner.candidate.family,
        data_digest=data.digest,
        run_id=winner.run_id,
        metrics=winner.metrics,
        n_labels=data.space.n_labels,
        n_areas=len(data.space.areas),
        use_title=use_title,
    )
    predictor = TrackPredictor(classifier, data.space, card, use_title=use_title)
    # confidence calibration + neighbour index (issue 11)
    confidence = artifact_extras.attach(predictor, winner.selection_proba, winner.selection_y, data, winner.selection)
    # drift reports: "unsure" is "not confident" (the answers' confident flag), for the dump and the holdout
    predictor.training_profile = build_profile(
        data.texts,
        data.y,
        data.space,
        winner.cv.oof_proba,
        seed,
        unsure_below=predictor.confidence.top1_threshold,
        unsure_source="not confident",
    )
    return Refit(predictor, confidence)
