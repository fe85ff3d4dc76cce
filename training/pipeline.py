"""The sweep as a pure pipeline: labeled files -> training set -> evaluations -> the champion's choice (then
:mod:`papertrack.training.refit` makes the prediction artifact). No MLflow and no printing here: each step returns
what it found (with :class:`~papertrack.training.planning.Note`s for the user); :mod:`papertrack.training.sweep` runs
the steps, :mod:`papertrack.training.sweep_logging` logs them to MLflow and :mod:`papertrack.training.report` prints
them.

Candidates of every family compete in one sweep: TF-IDF ones, sentence-embedding ones (when the ``embeddings``
extra is installed) and ensembles. Before cross-validation, every abstract is embedded once (on-disk cache);
ensembles are then evaluated on their members' out-of-fold probabilities (weights chosen with nested
cross-validation, see :mod:`papertrack.training.ensemble_weights`), without refitting any member."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from papertrack.models.candidates import Candidate
from papertrack.registry import ranking_metrics
from papertrack.training import preflight, taxonomies
from papertrack.training.champion import ChampionChoice, Contender, choose_champion, promotion
from papertrack.training.config import SweepConfig
from papertrack.training.cv import check_trainable, fold_indices
from papertrack.training.data import Direction, TrainingSet, one_year_only, temporal_direction
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
from papertrack.training.head_evaluation import Merging, ProgressOnly, evaluate_head
from papertrack.training.head_layer import SharedMembers
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
    heads: taxonomies.Taxonomies = field(default_factory=lambda: taxonomies.Taxonomies([]))
    # the taxonomies: ``data`` is the default (first) head's training set


@dataclass
class Embedded:
    """Every abstract embedded by one backend ahead of cross-validation."""

    backend: str
    encoded: int  # abstracts the model had to encode (0 with a warm cache)
    total: int
    seconds: float
    where: str  # the cache's folder, or "no disk cache"


def read(config: SweepConfig):
    """(records, summary) of the labeled files; the summary says what was skipped and why."""
    return load_dataset(
        [str(p) for p in config.paths], config.fmt, labeled=True, accept_suggested=config.accept_suggested
    )


def prepare(config: SweepConfig, records: list) -> Prepared:
    """Check that the records can be trained on (labels, memory) and make the training set (renames applied)."""
    files = [str(p) for p in config.paths]
    rename_map = RenameMap.with_extra(config.renames)
    crosswalks = taxonomies.default_crosswalks(config, records)
    check_trainable([rename_map.apply(r.label) for r in records], config.folds, files)
    preflight.check(records, files, jobs=config.n_jobs)  # labels that cannot fit in memory: refuse
    heads = taxonomies.build(records, rename_map, crosswalks, use_title=config.use_title, strict=True)
    for head in heads.heads[1:]:
        check_trainable(head.data.labels, config.folds, files)
    data = heads.default.data
    head_notes = []
    for head in heads.heads[1:]:
        temporal, why_not = temporal_direction(head.data)
        own = len(head.data.native_rows)
        said = (
            f"temporal holdout: train on the earlier years in its names ({len(temporal.train):,} rows), test on its "
            f"own {len(temporal.test):,} papers"
            if temporal is not None
            else f"no temporal holdout ({why_not})"
        )
        head_notes.append(
            Note(
                f"{head.name}: {said}; new names known: {config.folds}-fold over its own {own:,} papers, the "
                f"{len(head.data.y) - own:,} older rows on every fold's training side"
            )
        )
    sources = data.label_distribution()
    counts = {name: int(sources[name].sum()) for name in data.source_names}
    years = {name: sorted(set(data.years[data.sources == name].tolist())) for name in data.source_names}
    notes = [
        *heads.notes,
        *head_notes,
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
        ),
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
    return Prepared(records, data, rename_map, counts, notes, heads)


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
    heads: Sequence[taxonomies.Head] = (),
) -> list[CandidateResult]:
    """Every candidate cross-validated (stratified folds, fixed seed) and scored on the holdouts — in the default
    taxonomy (``data``) and, with ``heads``, in each other taxonomy (:func:`evaluate_head`: on the main taxonomy's
    members where it can, :mod:`papertrack.training.head_layer`, so the main taxonomy is evaluated first, its
    models also answering the other taxonomies' own papers); the other taxonomies' figures are merged into each
    candidate's metrics (:func:`merge_heads`) before ``listener`` hears of it."""
    listener = listener or Listener()
    split = fold_indices(data.y, data.space, config.folds, config.seed)
    extra, extra_rows = SharedMembers.extra_texts(data, [head.data for head in heads])
    if not heads:
        return evaluate_candidates(
            candidates, data, split, config.seed, listener, holdouts.directions, holdouts.temporal, config.n_jobs
        )
    main = evaluate_candidates(
        candidates,
        data,
        split,
        config.seed,
        ProgressOnly(listener),  # each result is merged with the heads' and told below
        holdouts.directions,
        holdouts.temporal,
        config.n_jobs,
        extra,
    )
    listener.phase(
        f"in each venue's own names: {', '.join(head.name for head in heads)} (next year's papers, and k-folds over "
        "their own papers with the older ones on every training side)…"
    )
    shared = SharedMembers(data, extra_rows, {r.candidate.name: r for r in main})
    # the heads side by side (a thread each): their fits share the worker processes, so one head's small batches
    # and serial steps (ensemble weights, layers) fill the workers another leaves idle; each result is the same
    # as evaluated alone (every fit is seeded)
    with ThreadPoolExecutor(max_workers=len(heads), thread_name_prefix="head") as pool:
        done = pool.map(lambda head: evaluate_head(candidates, head, config, listener, shared), heads)
        others = {head.name: (by_name, head.data) for head, by_name in zip(heads, done)}
    merging = Merging(listener, others, data.taxonomy)
    for result in main:
        merging.candidate_done(result)
    return main


def choose(results: Sequence[CandidateResult]) -> ChampionChoice:
    """The champion rule (:mod:`papertrack.training.champion`) on the sweep's held-out rows."""
    primary, _ = ranking_metrics(*[r.metrics for r in results])
    return choose_champion([contender(r, results) for r in results], primary)


def rescore_champion(
    champion,
    results: Sequence[CandidateResult],
    data: TrainingSet,
    holdouts: Holdouts,
    config: SweepConfig,
    heads: Sequence[taxonomies.Head] = (),
    listener: Listener | None = None,
) -> Contender | None:
    """The registered ``champion``'s recipe (its candidate, by name) scored on this sweep's holdouts: its result in
    ``results``, else evaluated now (with ``listener`` hearing of it); None when this papertrack does not know the
    candidate."""
    import dataclasses

    from papertrack.errors import UsageError
    from papertrack.training.planning import plan_candidates

    name = champion.tags.get("candidate")
    pool = list(results)
    found = next((r for r in results if r.candidate.name == name), None)
    if found is None:
        try:
            plan = plan_candidates([name], extra=config.extra_candidates) if name else None
        except UsageError:
            return None
        if plan is None:
            return None
        extra = evaluate_all(plan.candidates, data, holdouts, config, listener, heads)
        found = next(r for r in extra if r.candidate.name == name)
        pool += extra
    return dataclasses.replace(contender(found, pool), name=f"{name} (champion v{champion.version}'s recipe)")


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
