"""The training sweep: evaluate every candidate (each a nested MLflow run), choose the champion, refit it on all
data, log it as the pyfunc prediction artifact and register it behind the promotion gate.

:func:`run_sweep` runs the steps of the pure pipeline (:mod:`papertrack.training.pipeline`: data ->
evaluations -> choice -> refit), has the MLflow layer log them (:mod:`papertrack.training.sweep_logging`) and the
report say them (:mod:`papertrack.training.report`, on the console it is given). What to do is one
:class:`~papertrack.training.config.SweepConfig`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console

from papertrack import registry
from papertrack.registry import rank_key
from papertrack.store import Store
from papertrack.training import artifact_extras, pipeline
from papertrack.training import refit as refitting
from papertrack.training.champion import ChampionChoice
from papertrack.training.config import DEFAULT_BUDGET_MS, SweepConfig
from papertrack.training.planning import plan_candidates, plan_holdouts, within_budget
from papertrack.training.report import SweepReport
from papertrack.training.results import CandidateResult, Listener
from papertrack.training.sweep_logging import SweepLogger

__all__ = ["DEFAULT_BUDGET_MS", "SweepConfig", "SweepResult", "run_sweep"]


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
    tracking_uri: str = ""
    experiment_id: str = ""

    def leaderboard(self) -> list[CandidateResult]:
        return sorted(self.results, key=lambda r: rank_key(r.metrics), reverse=True)


class _Both(Listener):
    """The evaluation's listener: the MLflow layer first (it gives each result its run id), then the report."""

    def __init__(self, *listeners: Listener):
        self.listeners = listeners

    def started(self, total_fits: int) -> None:
        for listener in self.listeners:
            listener.started(total_fits)

    def candidate_started(self, candidate) -> None:
        for listener in self.listeners:
            listener.candidate_started(candidate)

    def fold_done(self, candidate) -> None:
        for listener in self.listeners:
            listener.fold_done(candidate)

    def candidate_done(self, result: CandidateResult) -> None:
        for listener in self.listeners:
            listener.candidate_done(result)

    def phase(self, description: str) -> None:
        for listener in self.listeners:
            listener.phase(description)


def run_sweep(config: SweepConfig, store: Store | Callable[[], Store], console: Console | None = None) -> SweepResult:
    """Run the sweep ``config`` describes, logged and registered in ``store`` (:func:`papertrack.store.open`, with
    ``create``); with ``console``, say what happens on it (else in the log). ``store`` may be the function that opens
    it (``papertrack train`` passes ``store.open``): it is called once the data has been read and checked, so a
    train that fails on its data creates no store."""
    started = time.perf_counter()
    _ = config.paths  # the default data's files exist (else one UsageError), before anything is said
    report = SweepReport(console)
    budget = config.budget  # candidates named with -c run and may win whatever they cost
    plan = plan_candidates(config.candidate_names, budget, config.extra_candidates)
    report.notes(plan.notes)
    records, summary = pipeline.read(config)
    report.summary(summary.lines())
    prepared = pipeline.prepare(config, records)
    report.notes(prepared.notes)
    data = prepared.data
    holdouts = plan_holdouts(data, config.folds, config.shift_holdout)
    report.notes(holdouts.notes)
    opened = store if isinstance(store, Store) else store()
    logger = SweepLogger(opened, config, prepared, plan, holdouts)
    uri, experiment = opened.tracking_uri, logger.experiment
    report.store(uri, experiment.name)
    with logger:
        baseline = pipeline.majority_baseline(data, holdouts.directions, holdouts.temporal)
        logger.baseline(baseline)
        embedded = pipeline.warm_embeddings(plan.candidates, data, config.seed, console)
        report.embeddings(embedded)
        logger.embeddings(embedded)
        with report:
            results = pipeline.evaluate_all(
                plan.candidates, data, holdouts, config, _Both(logger, report), heads=prepared.heads.heads[1:]
            )
        eligible, ineligible = within_budget(results, budget)
        report.ineligible(ineligible, budget)
        choice = pipeline.choose(eligible)
        result = SweepResult(
            logger.run_id,
            data.digest,
            results,
            baseline,
            next(r for r in results if r.candidate.name == choice.winner),
            embedding_seconds=sum(e.seconds for e in embedded),
            embedded_texts=sum(e.encoded for e in embedded),
            skipped=plan.skipped,
            choice=choice,
            sources=prepared.counts,
            over_budget=plan.over_budget,
            ineligible=[r.candidate.name for r in ineligible],
            budget_ms=budget,
            yardstick=holdouts.yardstick,
            tracking_uri=uri,
            experiment_id=experiment.experiment_id,
        )
        logger.choice(result)
        report.choice(result, len(records))
        refit_started = time.perf_counter()
        refit = refitting.refit(
            result.winner, data, config.seed, config.use_title, prepared.heads.heads[1:], config.n_jobs
        )
        for name, one in [(data.taxonomy, refit), *refit.heads.items()]:
            message, warning = artifact_extras.describe(one.confidence, one.held_out[2])
            report.calibration((f"{name}: " if refit.heads else "") + message, warning)
        result.model_uri = logger.model(result.winner, refit, data)
        result.refit_seconds = time.perf_counter() - refit_started
        report.refit(result.refit_seconds)
        if config.register:

            def rescore(champion):
                name = champion.tags.get("candidate")
                if all(r.candidate.name != name for r in results):
                    report.line(
                        f"The data changed since champion v{champion.version}: re-scoring its recipe ({name}) on "
                        "this sweep's holdouts for the promotion gate"
                    )
                return pipeline.rescore_champion(champion, results, data, holdouts, config, prepared.heads.heads[1:])

            logger.register(result, refit, rescore, config.force)
    result.wall_seconds = time.perf_counter() - started
    return result
