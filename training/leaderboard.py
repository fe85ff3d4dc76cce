"""The leaderboard of candidate runs, read back from the store it is given (its ``MlflowClient``)."""

from __future__ import annotations

import pandas as pd

from papertrack.registry import LEGACY_METRIC_NAMES, rank_key
from papertrack.store import Store

COLUMNS = (
    "temporal_label_top3",
    "temporal_label_top1",
    "temporal_area_top1",
    "temporal_label_macro_f1",
    "cv_label_top3",
    "cv_label_top1",
    "cv_label_macro_f1",
    "cv_area_top1",
    "cv_area_macro_f1",
    "cv_log_loss",
    "cv_ece",
    "shift_label_top3",
    "shift_label_top1",
    "shift_area_top1",
    "shift_label_macro_f1",
    "cv_fit_seconds",
    "predict_ms_per_abstract",
)
# a run logged before the metric names had their evaluation's prefix: its metric under the current name
LEGACY = {new: old for old, new in LEGACY_METRIC_NAMES.items()}


def runs_view(store: Store) -> tuple[str | None, str | None]:
    """(the papertrack experiment's id, the key of its stored runs view) in ``store``; None for what
    is not there (no ``train`` yet; trained by a version that stored no view)."""
    from papertrack.training.runs_link import RUNS_VIEW_KEY, SHARED_VIEW_TAG

    experiment = store.experiment()
    if experiment is None:
        return None, None
    return experiment.experiment_id, RUNS_VIEW_KEY if SHARED_VIEW_TAG + RUNS_VIEW_KEY in experiment.tags else None


def search_runs(store: Store, experiment_id: str, filter_string: str, max_results: int) -> pd.DataFrame:
    """The runs of ``experiment_id`` matching ``filter_string``, newest first, as ``mlflow.search_runs`` frames them
    (``run_id``, ``start_time``, ``metrics.*``, ``params.*``, ``tags.*``), read through ``store``'s client."""
    client = store.client()
    rows: list[dict] = []
    token = None
    while len(rows) < max_results:
        page = client.search_runs(
            [experiment_id],
            filter_string,
            order_by=["attributes.start_time DESC"],
            max_results=min(max_results - len(rows), 1000),
            page_token=token,
        )
        for run in page:
            row: dict = {
                "run_id": run.info.run_id,
                "start_time": pd.to_datetime(run.info.start_time, unit="ms", utc=True),
                "status": run.info.status,
            }
            row.update({f"metrics.{k}": v for k, v in run.data.metrics.items()})
            row.update({f"params.{k}": v for k, v in run.data.params.items()})
            row.update({f"tags.{k}": v for k, v in run.data.tags.items()})
            rows.append(row)
        token = page.token
        if not token:
            break
    return pd.DataFrame(rows)


def leaderboard(
    store: Store, latest_sweep_only: bool = True, limit: int = 50, sweep: str | None = None
) -> pd.DataFrame:
    """Candidate runs of ``store``, best first (:func:`papertrack.registry.rank_key`: temporal-holdout label top-3 when
    the runs have it, else the shift holdout's, else the cross-validated one; then the tie-breaker).

    The latest finished sweep's candidates (:func:`last_finished_sweep`: not the one a running ``train`` is filling),
    every sweep's (``latest_sweep_only=False``) or those of the sweep whose parent run id is ``sweep``."""
    experiment = store.experiment()
    if experiment is None:
        return pd.DataFrame()
    filter_string = "tags.`papertrack.kind` = 'candidate'"
    if sweep is not None:
        filter_string += f" and tags.`mlflow.parentRunId` = '{sweep}'"
    elif latest_sweep_only:
        latest = last_finished_sweep(store)
        if latest is None:
            return pd.DataFrame()
        filter_string += f" and tags.`mlflow.parentRunId` = '{latest}'"
    runs = search_runs(store, experiment.experiment_id, filter_string, max_results=max(limit, 1000))
    if runs.empty:
        return runs
    table = _table(runs)
    keys = [
        rank_key({k: v for k, v in row.items() if v == v and v is not None})
        for row in table[list(COLUMNS)].to_dict("records")
    ]
    # runs trained on different data are not ranked as like: grouped by data digest (the latest sweep's data
    # first), best first within each group
    recency = {digest: i for i, digest in enumerate(dict.fromkeys(table["data_digest"].fillna("").tolist()))}
    digests = table["data_digest"].fillna("").tolist()
    order = sorted(range(len(table)), key=lambda i: (-recency[digests[i]], keys[i]), reverse=True)
    table = table.iloc[order]
    return table.head(limit).reset_index(drop=True)


RUNNING = "RUNNING"


def sweeps(store: Store, max_results: int = 50) -> pd.DataFrame:
    """The sweep (parent) runs of ``store``, newest first, with their ``status`` (RUNNING while a train runs)."""
    experiment = store.experiment()
    if experiment is None:
        return pd.DataFrame()
    return search_runs(store, experiment.experiment_id, "tags.`papertrack.kind` = 'sweep'", max_results=max_results)


def _with_abandoned(found: pd.DataFrame) -> pd.DataFrame:
    """``found`` with ``abandoned``: RUNNING, but the process that ran it (the sweep's ``owner`` tag) has ended — a
    train killed, or stopped by a full disk, before it could mark its run FAILED. Such a sweep is read as failed."""
    from papertrack.registry import OWNER_TAG, owner_gone

    owners = found.get(f"tags.{OWNER_TAG}")
    found = found.copy()
    found["abandoned"] = [
        status == RUNNING and owners is not None and isinstance(owners.iloc[i], str) and owner_gone(owners.iloc[i])
        for i, status in enumerate(found["status"])
    ]
    return found


def last_finished_sweep(store: Store) -> str | None:
    """The run id of the newest FINISHED sweep, None when there is none: while a ``train`` runs, its sweep has no
    finished candidates yet, and after one failed, its runs are partial: the board shows the last finished one."""
    found = sweeps(store)
    if found.empty:
        return None
    finished = found[found["status"] == "FINISHED"]
    return None if finished.empty else str(finished.iloc[0]["run_id"])


def running_sweeps(store: Store) -> pd.DataFrame:
    """The sweeps whose run is RUNNING and whose process is alive (or cannot be told: another host, no owner)."""
    found = sweeps(store)
    if found.empty:
        return found
    found = _with_abandoned(found)
    return found[(found["status"] == RUNNING) & ~found["abandoned"]].reset_index(drop=True)


def failed_sweeps(store: Store) -> pd.DataFrame:
    """The sweeps newer than the last finished one that failed: ended FAILED, or abandoned while RUNNING."""
    found = sweeps(store)
    if found.empty:
        return found
    found = _with_abandoned(found)
    finished = found.index[found["status"] == "FINISHED"]
    newer = found.iloc[: finished[0]] if len(finished) else found
    return newer[(newer["status"] == "FAILED") | newer["abandoned"]].reset_index(drop=True)


def runs_by_id(store: Store, run_ids: list[str]) -> pd.DataFrame:
    """The leaderboard rows of the candidate runs ``run_ids`` (e.g. the champion's, when it is not in the view)."""
    experiment = store.experiment()
    if experiment is None or not run_ids:
        return pd.DataFrame()
    quoted = ", ".join(f"'{run_id}'" for run_id in run_ids if run_id.isalnum())
    runs = search_runs(store, experiment.experiment_id, f"attributes.run_id IN ({quoted})", max_results=len(run_ids))
    return runs if runs.empty else _table(runs)


def _table(runs: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard's columns of candidate runs as :func:`search_runs` frames them."""
    table = pd.DataFrame(
        {
            "run_id": runs["run_id"],
            "candidate": runs["tags.candidate"],
            "family": runs["tags.family"],
            "started": runs["start_time"],
            "data_digest": runs.get("params.data_digest"),
        }
    )
    # every taxonomy's figures side by side (temporal_<m>.<taxonomy>, known_<m>.<taxonomy>), after the fixed ones
    per_taxonomy = sorted(
        c.removeprefix("metrics.")
        for c in runs.columns
        if c.startswith(("metrics.temporal_label_top3.", "metrics.known_label_top3.", "metrics.temporal_area_top1."))
    )
    for column in per_taxonomy:
        table[column] = runs[f"metrics.{column}"]
    for column in COLUMNS:
        values = runs.get(f"metrics.{column}")
        legacy = runs.get(f"metrics.{LEGACY[column]}") if column in LEGACY else None
        if legacy is not None:
            values = legacy if values is None else values.fillna(legacy)
        table[column] = values
    return table
