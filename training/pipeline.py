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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from papertrack.models.artifact import TrackPredictor
from papertrack.models.candidates import Candidate
from papertrack.models.card import ModelCard
from papertrack.models.drift import build_profile
from papertrack.registry import ranking_metrics
from papertrack.training import artifact_extras, native_mixture, preflight, taxonomies
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


@dataclass
class Refit:
    predictor: TrackPredictor
    confidence: object  # the calibration attached to the predictor (models/confidence.py)
    result: CandidateResult | None = None  # the evaluation it was calibrated from
    heads: dict[str, Refit] = field(default_factory=dict)  # the other taxonomies' refits, by name
    held_out: tuple = ()  # (probabilities, true labels, what they are) the calibration was made on


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


def refit(
    winner: CandidateResult,
    data: TrainingSet,
    seed: int,
    use_title: bool,
    heads: Sequence[taxonomies.Head] = (),
    n_jobs: int = 1,
) -> Refit:
    """The winner fitted on all data, as the prediction artifact: the model card, the confidence calibration
    (on the held-out rows the winner was chosen on), the neighbour index and the drift profile — for the default
    taxonomy (``data``) and, with ``heads`` (the other taxonomies), one predictor per taxonomy inside it, each
    calibrated on its own papers' out-of-fold answers: a head evaluated on the main taxonomy's members
    (:mod:`papertrack.training.head_layer`) is those fitted members and its layers (no fit of its own); another is
    fitted on its own training set. The fits run ``n_jobs`` at a time (worker processes, as the sweep's fits)."""
    jobs = [(winner, data, seed, use_title, None, None)]
    layered = []
    for head in heads:
        result = winner.heads[head.name]
        result.run_id = winner.run_id
        # calibrated on its own papers' out-of-fold answers from the k-fold that had its names on the training
        # side, like the refit model (its temporal holdout, trained on older names only, is far less sure)
        native = head.data.native_rows
        known = (result.cv.oof_proba[native], head.data.y[native], "new-names-known")
        job = (result, head.data, seed, use_title, known, native, result.native_share)
        (layered if result.layers else jobs).append(job)
    # the neighbour indexes read the texts only: one thread builds them while the members are fitted (a worker is
    # idle once the quicker members are done) instead of one after another at the end
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="neighbours") as indexing:
        inline = len(jobs) == 1 or n_jobs <= 1
        ahead = [job[1] for job in jobs] if inline else []
        indexes = {
            id(d): indexing.submit(artifact_extras.neighbor_index, d) for d in [*ahead, *(j[1] for j in layered)]
        }
        if not inline:
            from joblib import Parallel, delayed

            done = Parallel(n_jobs=min(n_jobs, len(jobs)))(delayed(_refit_one)(*job) for job in jobs)
        else:  # one job (every head on the main taxonomy's members): an ensemble fits its members side by side
            done = [_refit_one(*job, n_jobs=n_jobs, neighbors=indexes[id(job[1])]) for job in jobs]
        main = done[0]
        base = main.predictor.classifier
        done += [
            _refit_one(
                *job,
                _layered_head(job[0], job[1], winner, base, data, seed),
                neighbors=indexes[id(job[1])],
            )
            for job in layered
        ]
    main.predictor.taxonomy = data.taxonomy
    main.predictor.sources = tuple(dict.fromkeys(data.sources.tolist())) if data.taxonomy else ()
    by_result = {id(other.result): other for other in done[1:]}
    for head in heads:
        other = by_result[id(winner.heads[head.name])]
        other.predictor.taxonomy, other.predictor.sources = head.name, head.sources
        main.predictor.heads[head.name] = other.predictor
        main.heads[head.name] = other
    return main


def _layered_head(
    result: CandidateResult, head: TrainingSet, winner: CandidateResult, base, data: TrainingSet, seed: int
):
    """A head's classifier from the main taxonomy's fitted ``base`` (the winner's refit) and the head's layers;
    a member the main ensemble left out (weight 0 there) is fitted on the main taxonomy's rows."""
    from papertrack.models.layered_head import LayeredHead

    spec = result.candidate.ensemble
    weights = result.member_weights if spec else {result.candidate.name: 1.0}
    members = [(name, result.layers[name], w) for name, w in weights.items() if w > 0]
    have = {name for name, _, _ in getattr(base, "members_", None) or [(winner.candidate.name, base, 1.0)]}
    extra = []
    if spec:
        unfitted = {name: model for name, model, _ in winner.candidate.build(data.space.n_labels, seed).members}
        extra = [(name, unfitted[name].fit(data.texts, data.y)) for name, _, _ in members if name not in have]
    return LayeredHead(base, winner.candidate.name, members, head.space.n_labels, spec.rule if spec else "mean", extra)


def _refit_one(
    winner: CandidateResult,
    data: TrainingSet,
    seed: int,
    use_title: bool,
    held_out: tuple | None = None,
    profiled: np.ndarray | None = None,
    native_share: float = 0.0,
    classifier=None,
    n_jobs: int = 1,
    neighbors: Future | None = None,  # the neighbour index being built (refit's thread), read once it is needed
) -> Refit:
    if classifier is None:  # else: a head on the main taxonomy's fitted members (training.head_layer)
        classifier = winner.candidate.build(data.space.n_labels, seed)
        parallel = n_jobs > 1 and "n_jobs" in classifier.get_params(deep=False)
        if parallel:
            classifier.set_params(n_jobs=n_jobs)
        classifier.fit(data.texts, data.y)
        if parallel:  # the artifact keeps the default (a refit of it elsewhere decides for itself)
            classifier.set_params(n_jobs=None)
    if native_share > 0:  # a crosswalked taxonomy: mixed with a model of its own papers
        classifier = native_mixture.refit_mixture(classifier, data, native_share, seed)
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
    proba, y, source = held_out or (winner.selection_proba, winner.selection_y, winner.selection)
    index = neighbors.result() if neighbors is not None else None
    confidence = artifact_extras.attach(predictor, proba, y, data, source, index)
    # drift reports: "unsure" is "not confident" (the answers' confident flag), for the dump and the holdout
    rows = np.arange(len(data.y)) if profiled is None else profiled  # rows with out-of-fold answers
    predictor.training_profile = build_profile(
        [data.texts[i] for i in rows],
        data.y[rows],
        data.space,
        winner.cv.oof_proba[rows],
        seed,
        unsure_below=predictor.confidence.top1_threshold,
        unsure_source="not confident",
    )
    return Refit(predictor, confidence, winner, held_out=(proba, y, source))
