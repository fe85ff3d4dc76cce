"""The sweep's MLflow layer: one parent run per ``train`` call (parameters, the dataset, the label distribution,
the majority baseline, the champion's choice and a description with the leaderboard), one nested run per
candidate (created as each finishes, written by a background thread while the next ones are fitted), the
winner's prediction artifact logged in its own run, and the registration behind the promotion gate. Everything
it logs comes from :mod:`papertrack.training.pipeline`.

It writes to the :class:`~papertrack.store.Store` it is given, through that store's ``MlflowClient`` (runs are
created, logged to and ended by id; MLflow's process-wide URIs and active run are not used), except for the one
call MLflow offers only on its globals, ``mlflow.pyfunc.log_model``, made inside :func:`papertrack.store.using`."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import mlflow

from papertrack import __version__, registry
from papertrack.models import manifest
from papertrack.models.candidates import Candidate
from papertrack.store import Store
from papertrack.training import tracking
from papertrack.training.champion import promotion
from papertrack.training.config import SweepConfig
from papertrack.training.data import TrainingSet, labels_by_year
from papertrack.training.fits import side_by_side
from papertrack.training.model_logging import log_model
from papertrack.training.pipeline import Embedded, Prepared, contender
from papertrack.training.planning import CandidatePlan, Holdouts
from papertrack.training.refit import Refit
from papertrack.training.results import CandidateResult, Listener
from papertrack.training.run_log import (
    RunLog,
    bounded,
    bounded_params,
    bounded_tags,
    dataset_name,
    metric_name,
    open_experiment,
)
from papertrack.training.runs_link import RUNS_VIEW_KEY, SHARED_VIEW_TAG
from papertrack.training.taxonomies import taxonomy_slug

if TYPE_CHECKING:
    from papertrack.training.sweep import SweepResult

RUNS_VIEW_METRICS = (
    "temporal_label_top3",
    "temporal_label_top1",
    "temporal_area_top1",
    "cv_label_top3",
    "cv_area_top1",
    "shift_label_top3",
    "insample_label_top3",
    "predict_ms_per_abstract",
)


class SweepLogger(Listener):
    """The parent run of a sweep and, as the evaluation's listener, one nested run per finished candidate."""

    def __init__(self, store: Store, config: SweepConfig, prepared: Prepared, plan: CandidatePlan, holdouts: Holdouts):
        self.store = store
        self.experiment = open_experiment(store)
        data, temporal, directions = prepared.data, holdouts.temporal, holdouts.directions
        paths = config.paths
        self.data, self.plan = data, plan
        self.dataset = mlflow.data.from_pandas(
            data.frame(),
            source=", ".join(str(p) for p in paths),
            name=dataset_name(data.source_names),
            targets="label",
            digest=data.digest,
        )
        budget = config.budget
        self.common = {
            "data_digest": data.digest,
            "data_paths": ", ".join(str(p) for p in paths),
            "records": len(prepared.records),
            "labels": data.space.n_labels,
            "areas": len(data.space.areas),
            "folds": config.folds,
            "seed": config.seed,
            "use_title": config.use_title,
            "sources": ", ".join(f"{name} ({n})" for name, n in prepared.counts.items()),
            "shift_holdout": ", ".join(d.name for d in directions) if directions else "none",
            "temporal_holdout": (f"{temporal.name}: train {' + '.join(temporal.trained_on)}, test {temporal.heldout}")
            if temporal is not None
            else "none",
            "selection": holdouts.yardstick,
            "renames": prepared.renames.describe(),
            "budget_ms": "none (candidates named)" if budget is None else budget,
        }
        self.counts = prepared.counts
        self.plots = config.plot_choice  # whose runs get the evaluation plots: top2, all or none
        # the top two's plots are drawn in the fits' worker processes when the sweep has them
        self.plot_jobs = config.n_jobs if side_by_side(config.n_jobs, len(data.y)) else 1
        self.run: RunLog | None = None
        # the candidates' runs are written by this one thread (one writer per run), in the order they finished
        self._background = ThreadPoolExecutor(1, thread_name_prefix="papertrack-candidate-runs")
        # (the candidate's run the job writes and ends, or None for a job that only adds plots to an ended run)
        self._pending: list[tuple[RunLog | None, Future]] = []

    def __enter__(self) -> SweepLogger:
        self.run = run = RunLog.start(
            self.store,
            self.experiment.experiment_id,
            f"sweep-{time.strftime('%Y%m%d-%H%M%S')}",
            # its owner: a sweep left RUNNING by a process that has ended (killed, disk full) is read as failed
            {"papertrack.kind": "sweep", "papertrack.version": __version__, registry.OWNER_TAG: registry.owner()},
        )
        run.params(bounded_params({**self.common, "candidates": ", ".join(c.name for c in self.plan.candidates)}))
        run.dataset(self.dataset)
        run.metrics({metric_name("records.", name): n for name, n in self.counts.items()})
        run.text(self.data.label_distribution().to_csv(index=False), "data/label_distribution_by_source.csv")
        run.text(labels_by_year(self.data).to_csv(index=False), "data/labels_by_year.csv")
        if self.plan.skipped:
            run.tags(bounded_tags({"skipped_candidates": ", ".join(self.plan.skipped)}))
        if self.plan.over_budget:
            run.tags(bounded_tags({"over_budget_candidates": ", ".join(self.plan.over_budget)}))
        return self

    def __exit__(self, *exc) -> None:
        failed = exc[0] is not None
        try:
            if failed:  # the sweep failed or was interrupted: runs not yet written are ended FAILED, not written
                for run, job in self._pending:
                    if job.cancel() and run is not None:
                        run.end(failed=True)
            for _, job in self._pending:
                if not job.cancelled() and job.exception() is not None:
                    failed = True
            if not exc[0]:
                self.flush()  # raises a candidate run's failure
        finally:
            self._pending = []
            self._background.shutdown(wait=True)
            self._run.end(failed=failed)

    @property
    def _run(self) -> RunLog:
        if self.run is None:
            raise RuntimeError("the sweep's run is not started: use SweepLogger in a with block")
        return self.run

    @property
    def run_id(self) -> str:
        return self._run.run_id

    def baseline(self, baseline: dict[str, float]) -> None:
        self._run.metrics({f"baseline_{k}": v for k, v in baseline.items()})

    def embeddings(self, embedded: Sequence[Embedded]) -> None:
        seconds = sum(e.seconds for e in embedded)
        if seconds:
            self._run.metrics({"embedding_seconds": seconds, "embedded_texts": sum(e.encoded for e in embedded)})

    def candidate_done(self, result: CandidateResult) -> None:
        """The candidate's run is created now (its id goes into ``result``); what goes into it — the plots, when
        every run gets them, take seconds — is written by one background thread while the next candidates are
        fitted (their worker processes would wait otherwise), in order; :meth:`flush` waits for it."""
        for _, done in self._pending:  # an earlier run that could not be written stops the sweep now
            if done.done() and done.exception() is not None:
                self.flush()
        candidate = result.candidate
        run = start_candidate_run(self.store, self.experiment.experiment_id, self.run_id, candidate)
        result.run_id = run.run_id
        params = {
            **self.common,
            "family": candidate.family,
            "features": candidate.features,
            **{f"hp.{k}": v for k, v in candidate.params.items()},
            **(result.extra_params or {}),
        }
        job = self._background.submit(
            log_candidate,
            run,
            candidate,
            params,
            dict(result.metrics),
            result.cv.oof_proba,
            self.data,
            self.dataset,
            self.plots == "all",
        )
        self._pending.append((run, job))

    def flush(self) -> None:
        """Wait until every finished candidate's run is written; the first failure is raised."""
        pending, self._pending = self._pending, []
        for _, job in pending:
            job.result()

    def choice(self, result: SweepResult) -> None:
        winner, choice = result.winner, result.choice
        run = self._run
        run.tags(bounded_tags({"winner": winner.candidate.name, "winner_run_id": winner.run_id, **choice.tags()}))
        run.metrics({f"best_{k}": v for k, v in winner.metrics.items()})
        run.tags(bounded_tags({"mlflow.note.content": describe(result)}))
        run.client.set_experiment_tag(
            self.experiment.experiment_id, SHARED_VIEW_TAG + RUNS_VIEW_KEY, json.dumps(runs_view(result))
        )
        if self.plots == "top2":  # drawn by the background thread while the winner is refitted
            for plotted in top_two(result):
                job = self._background.submit(
                    tracking.log_plots,
                    RunLog(self.store, plotted.run_id),
                    plotted.cv.oof_proba,
                    self.data.y,
                    self.data.space,
                    plotted.candidate.name,
                    n_jobs=self.plot_jobs,
                )
                self._pending.append((None, job))

    def model(self, winner: CandidateResult, refit: Refit, data: TrainingSet) -> str:
        self.flush()  # the winner's run is written (and ended) before the model goes into it
        return log_model(self.store, winner, refit, data, plots=self.plots != "none")

    def register(self, result: SweepResult, refit: Refit, rescore=None, force: bool = False) -> registry.Decision:
        """Register the refit winner; it becomes champion only past the promotion rule (training.champion.promotion):
        ``rescore(champion)`` gives the champion's recipe re-scored on this sweep's holdouts when the data
        changed (a Contender, or None)."""
        winner, choice = result.winner, result.choice
        mine = contender(winner, result.results)
        promotion.log_hits(self.store, winner.run_id, mine, choice.metric, result.data_digest)
        same_data = promotion.cost_challenge(self.store, mine, choice.metric, result.data_digest)
        heads = {
            one.predictor.taxonomy: (one.confidence, one.predictor.space.n_labels)
            for one in [refit, *refit.heads.values()]
        }
        default_slug = taxonomy_slug(refit.predictor.taxonomy) if refit.heads else ""

        def challenge(champion):
            if champion.tags.get("data_digest") == result.data_digest:
                return same_data(champion)
            rescored = rescore(champion) if rescore is not None else None
            return promotion.rescored_challenge(mine, rescored, champion, choice.metric, result.data_digest)

        def refuse(champion):
            return promotion.sanity_problems(
                winner.metrics, result.baseline, choice.metric, heads, champion, force, default_slug
            )

        decision = registry.register(
            self.store,
            result.model_uri,
            winner.run_id,
            winner.metrics,
            result.data_digest,
            winner.candidate.name,
            promotion.promotion_rule(
                winner.metrics, result.data_digest, challenge, refuse, caveats=promotion.sanity_caveats(heads)
            ),
            decision_tags=choice.tags(),
            info={
                manifest.FILES_TAG: self.store.client().get_run(winner.run_id).data.tags.get(manifest.FILES_TAG, ""),
                "n_labels": str(sum(n for _, n in heads.values())),
                "taxonomies": ", ".join(name for name in heads if name)[:250],
            },
        )
        result.decision = decision
        self._run.tags({"registered_version": decision.version})
        self._run.tags(bounded_tags({"mlflow.note.content": describe(result)}))
        return decision


def start_candidate_run(store: Store, experiment_id: str, parent_run_id: str, candidate: Candidate) -> RunLog:
    """The candidate's run, nested in the sweep's, with its tags (its id is known at once)."""
    tags = {"papertrack.kind": "candidate", "family": candidate.family, "candidate": candidate.name}
    return RunLog.start(
        store, experiment_id, candidate.name, bounded_tags({**tags, "features": candidate.features}), parent_run_id
    )


def top_two(result: SweepResult) -> list[CandidateResult]:
    """The winner and the runner-up (the best other candidate by the champion rule's ranking): the runs whose
    plots someone looks at."""
    return [result.winner, *[r for r in result.leaderboard() if r is not result.winner][:1]]


def log_candidate(
    run: RunLog,
    candidate: Candidate,
    params: dict,
    metrics: dict,
    oof_proba,
    data: TrainingSet,
    dataset,
    plots: bool = True,
) -> None:
    """Into the candidate's run: its parameters, the dataset, its metrics and evaluation artifacts (with
    ``plots``, the plots too: ~4 s of drawing for 86 labels); then ends it (FAILED if any of it fails)."""
    try:
        run.params(bounded_params(params))
        run.dataset(dataset)
        run.metrics(metrics)
        tracking.log_evaluation_artifacts(run, oof_proba, data.y, data.space, candidate.name, plots=plots)
    except BaseException:
        run.end(failed=True)
        raise
    run.end()


def runs_view(result: SweepResult) -> dict:
    """MLflow's UI state for the runs table of this sweep: its candidates (not the collapsed sweep row), best
    first by the champion rule's metric, with the metric columns papertrack ranks by (the UI shows none by
    default)."""
    metrics = [m for m in RUNS_VIEW_METRICS if any(m in r.metrics for r in result.results)]
    # each taxonomy's next-year and new-names-known top-3, after the pooled one
    per_taxonomy = sorted(
        {k for r in result.results for k in r.metrics if k.startswith(("temporal_label_top3.", "known_label_top3."))}
    )
    metrics[1:1] = per_taxonomy
    columns = ["attributes.`Models`", *(f"metrics.`{m}`" for m in metrics)]
    return {
        "searchFilter": (
            f"tags.`papertrack.kind` = 'candidate' and tags.`mlflow.parentRunId` = '{result.parent_run_id}'"
        ),
        "orderByKey": f"metrics.`{result.choice.metric}`",
        "orderByAsc": False,
        "startTime": "ALL",
        "lifecycleFilter": "Active",
        "modelVersionFilter": "All Runs",
        "datasetsFilter": [],
        "selectedColumns": columns,
        "columnOrder": columns,  # else alphabetical
        "columnWidths": {c: 150 for c in columns[1:]},
        "runsHiddenMode": "SHOW_ALL",
    }


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
        "Sources: " + _sources_line(result.sources),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in result.leaderboard():
        m = r.metrics
        cells = [r.candidate.name]
        if later:
            cells += [f"{m[k]:.3f}" for k in ("temporal_label_top3", "temporal_label_top1", "temporal_area_top1")]
        cells += [f"{m[k]:.3f}" for k in ("cv_label_top3", "cv_label_top1", "cv_area_top1")]
        if shift:
            cells += [f"{m[k]:.3f}" for k in ("shift_label_top3", "shift_label_top1", "shift_area_top1")]
        lines.append("| " + " | ".join(cells + [f"{m['predict_ms_per_abstract']:.2f}"]) + " |")
    if result.over_budget:
        lines += ["", f"Left out by the {result.budget_ms:g} ms budget: {', '.join(result.over_budget)}"]
    return "\n".join(lines)


def _sources_line(sources: dict[str, int], shown: int = 20) -> str:
    """The first ``shown`` sources with their record counts (each name at most 100 characters), then how many
    more: the description stays within MLflow's tag limit whatever the data's venues."""
    items = [f"{bounded(k, 100)} ({v:,})" for k, v in list(sources.items())[:shown]]
    if len(sources) > shown:
        items.append(f"… {len(sources) - shown:,} more")
    return ", ".join(items)
