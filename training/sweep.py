"""The training sweep: cross-validate every candidate as a nested MLflow run, refit the best on
all data, log it as the pyfunc prediction artifact and register it behind the promotion gate.

Candidates of every family compete in one sweep: TF-IDF ones, sentence-embedding ones (when the
``embeddings`` extra is installed; otherwise they are left out of the default sweep and one line
says so) and ensembles. Before cross-validation, every abstract is embedded once (progress bar,
on-disk cache); ensembles are then evaluated on their members' out-of-fold probabilities (weights
chosen with nested cross-validation, see :mod:`papertrack.training.ensemble_weights`), without refitting
any member."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from papertrack import __version__, registry, store
from papertrack.errors import UsageError
from papertrack.features.ingest import load_dataset
from papertrack.models.artifact import PREDICTOR_FILE, PaperTrackModel, TrackPredictor, signature
from papertrack.models.candidates import Candidate
from papertrack.models.card import ModelCard
from papertrack.models.catalogue import CANDIDATES, select
from papertrack.models.drift import build_profile
from papertrack.registry import rank_key, ranking_metrics
from papertrack.settings import EXPERIMENT_NAME
from papertrack.training import preflight, promotion, tracking
from papertrack.training.champion import ChampionChoice, Contender, choose_champion
from papertrack.training.cv import check_trainable, fold_indices
from papertrack.training.data import (
    Direction,
    TrainingSet,
    labels_by_year,
    one_year_only,
    shift_directions,
    temporal_direction,
)
from papertrack.training.evaluation import (
    SHIFT_METRICS,
    CandidateResult,
    Listener,
    ShiftResult,
    evaluate_candidates,
    shift_metrics,
    temporal_metrics,
)
from papertrack.training.renames import RenameMap
from papertrack.training.scoring import evaluate

MIN_SHIFT_RECORDS = 100  # a source this small is neither a fair test set nor a usable training side
DEFAULT_BUDGET_MS = 5.0  # predict cost per abstract the default sweep stays within (a fast service)
CORE_REQUIREMENTS = ("scikit-learn", "numpy", "pandas", "scipy", "joblib", "mlflow", "lightgbm")


@dataclass
class SweepResult:
    parent_run_id: str
    data_digest: str
    results: list[CandidateResult]
    baseline: dict[str, float]
    winner: CandidateResult
    model_uri: str | None = None
    decision: registry.Decision | None = None
    wall_seconds: float = 0.0
    embedding_seconds: float = 0.0  # embedding every abstract before cross-validation (cache misses)
    embedded_texts: int = 0  # abstracts the embedding model had to encode (0 with a warm cache)
    skipped: list[str] = field(default_factory=list)  # candidates left out (embeddings extra missing)
    over_budget: list[str] = field(default_factory=list)  # left out of the default sweep by the cost budget
    ineligible: list[str] = field(default_factory=list)  # ran, but measured over the budget: cannot win
    budget_ms: float | None = None  # None: no budget (candidates named with -c)
    yardstick: str = ""  # what the champion was chosen on: "temporal holdout (...)", "shift holdout", "CV"
    refit_seconds: float = 0.0
    choice: ChampionChoice | None = None  # the champion rule's decision (winner and why)
    sources: dict[str, int] = field(default_factory=dict)  # records per source

    def leaderboard(self) -> list[CandidateResult]:
        return sorted(self.results, key=lambda r: rank_key(r.metrics), reverse=True)


def majority_baseline(
    data: TrainingSet, directions: Sequence[Direction] = (), temporal: Direction | None = None
) -> dict[str, float]:
    """Metrics of always answering the label frequencies of the training set (on a holdout: of each
    direction's training side)."""
    prior = np.bincount(data.y, minlength=data.space.n_labels) / len(data.y)
    metrics = evaluate(np.tile(prior, (len(data.y), 1)), data.y, data.space)

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


@dataclass
class Holdouts:
    """The held-out evaluations of a sweep and which one chooses the champion."""

    temporal: Direction | None
    directions: list[Direction]
    yardstick: str  # printed and logged: what the champion is chosen on, and why that one
    lines: list[str] = field(default_factory=list)  # what to print about them


def plan_holdouts(data: TrainingSet, folds: int) -> Holdouts:
    """The temporal holdout when the sources span several years (train on the earlier years, test on
    the latest); the cross-venue shift holdout among the sources of the earlier years (with one year: of
    all sources); and the fallback when neither can be made: ``folds``-fold cross-validation."""
    counts = {name: int((data.sources == name).sum()) for name in data.source_names}
    lines = []
    temporal, why_not = temporal_direction(data)
    if temporal is not None and (len(temporal.test) < MIN_SHIFT_RECORDS or len(temporal.train) < MIN_SHIFT_RECORDS):
        why_not = (
            f"the latest year has {len(temporal.test):,} records and the earlier years {len(temporal.train):,} "
            f"(fewer than {MIN_SHIFT_RECORDS} on a side)"
        )
        temporal = None
    if temporal is not None:
        lines.append(
            f"temporal holdout: train on {' + '.join(temporal.trained_on)} ({len(temporal.train):,} "
            f"records), test on {temporal.heldout} ({len(temporal.test):,}): the champion is chosen on it"
        )
    earlier = temporal.train if temporal is not None else None
    directions = shift_directions(data.sources, earlier)
    small = {
        name: n
        for name, n in counts.items()
        if n < MIN_SHIFT_RECORDS and any(name in (d.heldout, *d.trained_on) for d in directions)
    }
    if directions and small:
        lines.append(
            f"[yellow]no shift holdout: {', '.join(f'{k} has {v:,} records' for k, v in small.items())} "
            f"(fewer than {MIN_SHIFT_RECORDS})[/]"
        )
        directions = []
    elif directions:
        lines.append(
            f"shift holdout (cross-venue{', earlier years only' if temporal is not None else ''}): "
            f"{', '.join(d.name for d in directions)}"
            + ("" if temporal is not None else "; the champion is chosen on it")
        )
    if temporal is not None:
        yardstick = f"temporal holdout ({temporal.name})"
    elif directions:
        yardstick = "shift holdout"
        lines.insert(0, f"[yellow]no temporal holdout: {why_not}; falling back to the shift holdout[/]")
    else:
        yardstick = f"{folds}-fold cross-validation"
        lines.insert(
            0,
            f"[yellow]no temporal holdout: {why_not}; no shift holdout "
            f"({'one source' if len(counts) < 2 else 'too few records per source'}): the champion is "
            f"chosen by {folds}-fold cross-validation[/]",
        )
    return Holdouts(temporal, directions, yardstick, lines)


def pip_requirements(candidate: Candidate) -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    pinned = []
    for dist in dict.fromkeys((*CORE_REQUIREMENTS, *candidate.requirements)):
        try:
            # a local version label (torch "2.13.0+cpu") is not on PyPI: pin the public version
            pinned.append(f"{dist}=={version(dist).split('+')[0]}")
        except PackageNotFoundError:
            pinned.append(dist)
    return [*pinned, f"papertrack=={__version__}"]


def run_sweep(
    data_paths: Sequence[Path],
    *,
    fmt: str | None = None,
    candidate_names: list[str] | None = None,
    folds: int = 5,
    seed: int = 42,
    use_title: bool = False,
    register: bool = True,
    console: Console | None = None,
    accept_suggested: bool = False,
    budget_ms: float | None = DEFAULT_BUDGET_MS,
    renames: Sequence[str] = (),
    jobs: int | None = None,
) -> SweepResult:
    from papertrack.training.fits import default_jobs

    console = console or Console()
    jobs = jobs or default_jobs()
    started = time.perf_counter()
    rename_map = RenameMap.with_extra(renames)
    budget = None if candidate_names else budget_ms  # candidates named with -c run and may win whatever they cost
    candidates, skipped, over_budget = plan_candidates(candidate_names, console, budget)
    records, summary = load_dataset([str(p) for p in data_paths], fmt, labeled=True, accept_suggested=accept_suggested)
    for line in summary.lines():  # first: they say why records were left out (duplicates, model guesses)
        console.print(f"  {line}")
    check_trainable([rename_map.apply(r.label) for r in records], folds, [str(p) for p in data_paths])
    preflight.check(records, [str(p) for p in data_paths], jobs=jobs)  # labels that cannot fit in memory: refuse
    data = TrainingSet.from_records(records, use_title=use_title, renames=rename_map)
    sources = data.label_distribution()
    counts = {name: int(sources[name].sum()) for name in data.source_names}
    years = {name: sorted(set(data.years[data.sources == name].tolist())) for name in data.source_names}
    console.print(
        "  sources: "
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
    used_renames = rename_map.used(r.label for r in records)
    if used_renames:
        renamed = sum(r.label in used_renames for r in records)
        console.print(
            "  renamed tracks (the latest name is taught): "
            + "; ".join(f"{escape(old)} -> {escape(new)}" for old, new in used_renames.items())
            + f" ({renamed:,} records)"
        )
    for year, labels in one_year_only(data).items():
        shown = ", ".join(escape(label) for label in labels[:6]) + (
            f", … ({len(labels) - 6} more)" if len(labels) > 6 else ""
        )
        console.print(f"  [dim]{len(labels)} label(s) only in {year}: {shown}[/]")
    holdouts = plan_holdouts(data, folds)
    for line in holdouts.lines:
        console.print(f"  {line}")
    temporal, directions = holdouts.temporal, holdouts.directions
    uri = store.configure()
    experiment = mlflow.get_experiment_by_name(EXPERIMENT_NAME)
    # MLflow 3 opens an experiment on its GenAI overview unless it is marked as model development
    mlflow.set_experiment_tag("mlflow.experimentKind", "custom_model_development")
    console.print(f"MLflow store: [bold]{uri}[/]  (experiment '{experiment.name}')")
    dataset = mlflow.data.from_pandas(
        data.frame(),
        source=", ".join(str(p) for p in data_paths),
        name=" + ".join(data.source_names),
        targets="label",
        digest=data.digest,
    )
    common = {
        "data_digest": data.digest,
        "data_paths": ", ".join(str(p) for p in data_paths),
        "records": len(records),
        "labels": data.space.n_labels,
        "areas": len(data.space.areas),
        "folds": folds,
        "seed": seed,
        "use_title": use_title,
        "sources": ", ".join(f"{name} ({n})" for name, n in counts.items()),
        "shift_holdout": ", ".join(d.name for d in directions) if directions else "none",
        "temporal_holdout": (f"{temporal.name}: train {' + '.join(temporal.trained_on)}, test {temporal.heldout}")
        if temporal is not None
        else "none",
        "selection": holdouts.yardstick,
        "renames": rename_map.describe(),
        "budget_ms": "none (candidates named)" if budget is None else budget,
    }

    with mlflow.start_run(run_name=f"sweep-{time.strftime('%Y%m%d-%H%M%S')}") as parent:
        mlflow.set_tags({"papertrack.kind": "sweep", "papertrack.version": __version__})
        mlflow.log_params({**common, "candidates": ", ".join(c.name for c in candidates)})
        tracking.log_dataset_input(dataset)
        mlflow.log_metrics({f"records.{_metric_safe(name)}": n for name, n in counts.items()})
        mlflow.log_text(sources.to_csv(index=False), "data/label_distribution_by_source.csv")
        mlflow.log_text(labels_by_year(data).to_csv(index=False), "data/labels_by_year.csv")
        if skipped:
            mlflow.set_tag("skipped_candidates", ", ".join(skipped))
        if over_budget:
            mlflow.set_tag("over_budget_candidates", ", ".join(over_budget))
        baseline = majority_baseline(data, directions, temporal)
        mlflow.log_metrics({f"baseline_{k}": v for k, v in baseline.items()})
        embed_seconds, embedded = warm_embeddings(candidates, data, seed, console)
        if embed_seconds:
            mlflow.log_metrics({"embedding_seconds": embed_seconds, "embedded_texts": embedded})
        split = fold_indices(data.y, data.space, folds, seed)
        with _SweepListener(console, data, dataset, common) as listener:
            results = evaluate_candidates(candidates, data, split, seed, listener, directions, temporal, jobs)
        eligible, ineligible = within_budget(results, budget)
        if ineligible:
            console.print(
                f"  [yellow]measured over the {budget:g} ms budget, so not eligible to win: "
                + ", ".join(
                    f"{r.candidate.name} ({r.metrics[promotion.COST_METRIC]:.1f} ms/abstract)" for r in ineligible
                )
                + " (raise --budget-ms or name them with -c)[/]"
            )
        choice = choose(eligible)
        winner = next(r for r in results if r.candidate.name == choice.winner)
        mlflow.set_tags({"winner": winner.candidate.name, "winner_run_id": winner.run_id, **choice.tags()})
        mlflow.log_metrics({f"best_{k}": v for k, v in winner.metrics.items()})
        result = SweepResult(
            parent.info.run_id,
            data.digest,
            results,
            baseline,
            winner,
            embedding_seconds=embed_seconds,
            embedded_texts=embedded,
            skipped=skipped,
            choice=choice,
            sources=counts,
            over_budget=over_budget,
            ineligible=[r.candidate.name for r in ineligible],
            budget_ms=budget,
            yardstick=holdouts.yardstick,
        )
        mlflow.set_tag("mlflow.note.content", describe(result))
        console.print(f"Champion rule (on the {holdouts.yardstick}): {choice.reason}")
        console.print(f"Winner: [bold]{winner.candidate.name}[/]; refitting on all {len(records):,} records")
        refit_started = time.perf_counter()
        result.model_uri = _refit_and_log(winner, data, seed, use_title)
        result.refit_seconds = time.perf_counter() - refit_started
        console.print(f"Refit and logged the winner in {result.refit_seconds:.1f} s")
        if register:
            mine = contender(winner, results)
            promotion.log_hits(winner.run_id, mine, choice.metric, data.digest)
            result.decision = registry.register(
                result.model_uri,
                winner.run_id,
                winner.metrics,
                data.digest,
                winner.candidate.name,
                decision_tags=choice.tags(),
                challenge=promotion.cost_challenge(mine, choice.metric, data.digest),
            )
            mlflow.set_tag("registered_version", result.decision.version)
            mlflow.set_tag("mlflow.note.content", describe(result))
    result.wall_seconds = time.perf_counter() - started
    return result


def _metric_safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-." else "_" for ch in name)


def within_budget(
    results: Sequence[CandidateResult], budget: float | None
) -> tuple[list[CandidateResult], list[CandidateResult]]:
    """(eligible, over budget): the results whose measured predict cost is within ``budget`` ms per abstract
    (all when there is no budget, or when none is within it)."""
    if budget is None:
        return list(results), []
    eligible = [r for r in results if r.metrics[promotion.COST_METRIC] <= budget]
    if not eligible:
        return list(results), []
    return eligible, [r for r in results if r.metrics[promotion.COST_METRIC] > budget]


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


def describe(result: SweepResult) -> str:
    """The parent run's description (markdown): the leaderboard and the champion decision."""
    shift = any("shift_label_top3" in r.metrics for r in result.results)
    later = any("temporal_label_top3" in r.metrics for r in result.results)
    head = (
        ["candidate"]
        + (["temporal top3", "temporal top1", "temporal area"] if later else [])
        + ["CV top3", "CV top1", "CV area"]
        + (["shift top3", "shift top1", "shift area"] if shift else [])
        + ["ms/abstract"]
    )
    lines = [f"**Champion rule** (on the {result.yardstick}): {result.choice.reason}", ""]
    if result.decision:
        lines += [
            f"Registered version {result.decision.version} as **{result.decision.alias}**: {result.decision.reason}",
            "",
        ]
    lines += [
        "Sources: " + ", ".join(f"{k} ({v:,})" for k, v in result.sources.items()),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in result.leaderboard():
        m = r.metrics
        cells = [r.candidate.name]
        if later:
            cells += [f"{m[k]:.3f}" for k in ("temporal_label_top3", "temporal_label_top1", "temporal_area_top1")]
        cells += [f"{m[k]:.3f}" for k in ("label_top3", "label_top1", "area_top1")]
        if shift:
            cells += [f"{m[k]:.3f}" for k in ("shift_label_top3", "shift_label_top1", "shift_area_top1")]
        lines.append("| " + " | ".join(cells + [f"{m['predict_ms_per_abstract']:.2f}"]) + " |")
    if result.over_budget:
        lines += ["", f"Left out by the {result.budget_ms:g} ms budget: {', '.join(result.over_budget)}"]
    return "\n".join(lines)


def plan_candidates(
    names: list[str] | None, console: Console, budget_ms: float | None = None
) -> tuple[list[Candidate], list[str], list[str]]:
    """The candidates to run, in order, the ones left out because the embeddings extra is missing, and the
    ones left out by the cost budget. Members of a selected ensemble are added before it (they are
    cross-validated and logged like any candidate). The default sweep leaves out — with one printed line
    saying how to include them — candidates whose measured cost (``Candidate.expected_ms``) is over
    ``budget_ms``, and those needing the embeddings extra when it is not installed; naming one explicitly
    runs it (an error when the extra is missing)."""
    from papertrack.features.embeddings import unavailable_reason
    from papertrack.models.embedding_candidates import needs_embeddings

    chosen = select(names)
    over_budget: list[str] = []
    if budget_ms is not None and not names:
        over = [c for c in chosen if c.expected_ms > budget_ms]
        if over:
            over_budget = [c.name for c in over]
            console.print(
                f"  [dim]over the {budget_ms:g} ms/abstract budget, left out: "
                + ", ".join(f"{c.name} (~{c.expected_ms:g} ms)" for c in over)
                + f"; include them with --budget-ms "
                f"{_round_up(max(c.expected_ms for c in over))} or -c NAME[/]"
            )
            chosen = [c for c in chosen if c.expected_ms <= budget_ms]
    reason = unavailable_reason()
    if reason:
        unusable = [c.name for c in chosen if needs_embeddings(c)]
        if unusable and names:
            raise UsageError(f"candidate(s) {', '.join(unusable)} need sentence embeddings, but {reason}")
        if unusable:
            console.print(
                f"[yellow]Leaving out {len(unusable)} embedding candidate(s) "
                f"({', '.join(unusable)}): {escape(reason)}[/]"
            )
        chosen = [c for c in chosen if not needs_embeddings(c)]
    else:
        unusable = []
    planned: dict[str, Candidate] = {}
    for candidate in chosen:
        if candidate.is_ensemble:
            added = [m for m in candidate.members if m not in planned and m not in {c.name for c in chosen}]
            for member in candidate.members:
                if member not in CANDIDATES:
                    raise UsageError(f"ensemble {candidate.name!r}: member {member!r} is not a registered candidate")
                planned.setdefault(member, CANDIDATES[member])
            if added:
                console.print(f"  ensemble {candidate.name} adds its member(s): {', '.join(added)}")
        planned[candidate.name] = candidate
    # singles first (in order), then ensembles, which are evaluated on the singles' OOF matrices
    ordered = [c for c in planned.values() if not c.is_ensemble] + [c for c in planned.values() if c.is_ensemble]
    return ordered, unusable, over_budget


def _round_up(ms: float) -> int:
    """The first of 10, 20, 50, 100, 200, 500, ... that is at least ``ms``."""
    scale = 10
    while True:
        for step in (scale, 2 * scale, 5 * scale):
            if step >= ms:
                return step
        scale *= 10


def warm_embeddings(
    candidates: Sequence[Candidate], data: TrainingSet, seed: int, console: Console
) -> tuple[float, int]:
    """Embed every abstract once (cache misses only, with a progress bar) before cross-validation,
    so that no fold waits for the embedding model. Returns (seconds, texts encoded)."""
    from papertrack.features.embeddings import embedding_steps, get_embedder

    backends: dict[str, object] = {}
    for candidate in candidates:
        if candidate.is_ensemble:
            continue
        for step in embedding_steps(candidate.build(data.space.n_labels, seed)):
            backends.setdefault(step.backend, step)
    seconds, encoded = 0.0, 0
    for backend, step in backends.items():
        embedder = get_embedder(backend)
        started = time.perf_counter()
        texts = step.warm(data.texts, progress=True, console=console)
        elapsed = time.perf_counter() - started
        seconds, encoded = seconds + elapsed, encoded + texts
        where = embedder.cache.path if embedder.cache else "no disk cache"
        rate = f", {texts / elapsed:.1f} abstracts/s" if texts else ""
        console.print(
            f"Embeddings ({backend}): {len(data.texts) - texts:,} of {len(data.texts):,} abstracts from "
            f"the cache, {texts:,} encoded in {elapsed:.1f} s{rate} ({where})"
        )
    return seconds, encoded


class _SweepListener(Listener):
    """The sweep's side of the evaluation: a progress bar, one printed line and one nested MLflow
    run (metrics, params, artifacts) per finished candidate."""

    def __init__(self, console: Console, data: TrainingSet, dataset, common: dict):
        self.console, self.data, self.dataset, self.common = console, data, dataset, common
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self.progress = Progress(*columns, console=console, transient=False)
        self.task = None

    def __enter__(self) -> _SweepListener:
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def started(self, total_folds: int) -> None:
        self.task = self.progress.add_task("cross-validating", total=total_folds)

    def candidate_started(self, candidate: Candidate) -> None:
        if not candidate.is_ensemble:
            self.progress.update(self.task, description=f"{candidate.name:<34}")
        elif self.progress.live.is_started:
            self.progress.stop()  # ensembles refit nothing: no bar, just their lines

    def fold_done(self, candidate: Candidate) -> None:
        self.progress.advance(self.task)

    def candidate_done(self, result: CandidateResult) -> None:
        result.run_id = _log_candidate(
            result.candidate,
            result.metrics,
            result.cv.oof_proba,
            self.data,
            self.dataset,
            self.common,
            result.extra_params,
        )
        _print_line(self.progress.console, result.candidate.name, result.metrics)
        if result.candidate.is_ensemble:
            self.console.print(
                f"  {'':<34} weights: " + ", ".join(f"{m} {w:.2f}" for m, w in result.member_weights.items() if w > 0)
            )


def _print_line(console: Console, name: str, metrics: dict[str, float]) -> None:
    later = (
        f"next year top3 {metrics['temporal_label_top3']:.3f} top1 {metrics['temporal_label_top1']:.3f} "
        f"area {metrics['temporal_area_top1']:.3f} | "
        if "temporal_label_top3" in metrics
        else ""
    )
    shift = f" | shift top3 {metrics['shift_label_top3']:.3f}" if "shift_label_top3" in metrics else ""
    console.print(
        f"  {name:<26} {later}CV top3 {metrics['label_top3']:.3f} area {metrics['area_top1']:.3f}"
        f"{shift} | {metrics['predict_ms_per_abstract']:.2f} ms"
    )


def _log_candidate(
    candidate: Candidate,
    metrics: dict[str, float],
    oof: np.ndarray,
    data: TrainingSet,
    dataset,
    common: dict,
    extra_params: dict | None = None,
) -> str:
    with mlflow.start_run(run_name=candidate.name, nested=True) as run:
        mlflow.set_tags(
            {
                "papertrack.kind": "candidate",
                "family": candidate.family,
                "candidate": candidate.name,
                "features": candidate.features,
            }
        )
        mlflow.log_params(
            {
                **common,
                "family": candidate.family,
                "features": candidate.features,
                **{f"hp.{k}": v for k, v in candidate.params.items()},
                **(extra_params or {}),
            }
        )
        tracking.log_dataset_input(dataset)
        mlflow.log_metrics(metrics)
        tracking.log_evaluation_artifacts(oof, data.y, data.space, candidate.name)
    return run.info.run_id


def _refit_and_log(winner: CandidateResult, data: TrainingSet, seed: int, use_title: bool) -> str:
    """Refit the winner on all data and log it, in the winner's own run, as the pyfunc artifact."""
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
    example = pd.DataFrame(
        {"abstract": [r.abstract for r in data.records[:2]], "title": [r.title or "" for r in data.records[:2]]}
    )
    with tempfile.TemporaryDirectory() as tmp, mlflow.start_run(run_id=winner.run_id, nested=True):
        from papertrack.training import artifact_extras  # confidence calibration + neighbour index (issue 11)

        artifact_extras.attach(predictor, winner.selection_proba, winner.selection_y, data, winner.selection)
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
        path = predictor.save(Path(tmp) / PREDICTOR_FILE)
        logged = mlflow.pyfunc.log_model(
            name="model",
            python_model=PaperTrackModel(),
            artifacts={"predictor": str(path)},
            signature=signature(),
            input_example=example,
            pip_requirements=pip_requirements(winner.candidate),
        )
        mlflow.set_tag("refit", "all data")
    return logged.model_uri
