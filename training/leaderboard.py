"""The leaderboard of candidate runs, read back from MLflow with ``mlflow.search_runs``."""

from __future__ import annotations

import mlflow
import pandas as pd

from papertrack.registry import rank_key
from papertrack.settings import EXPERIMENT_NAME

COLUMNS = (
    "temporal_label_top3",
    "temporal_label_top1",
    "temporal_area_top1",
    "temporal_label_macro_f1",
    "label_top3",
    "label_top1",
    "label_macro_f1",
    "area_top1",
    "area_macro_f1",
    "log_loss",
    "ece",
    "shift_label_top3",
    "shift_label_top1",
    "shift_area_top1",
    "shift_label_macro_f1",
    "fit_seconds",
    "predict_ms_per_abstract",
)


def leaderboard(latest_sweep_only: bool = True, limit: int = 50) -> pd.DataFrame:
    """Candidate runs, best first (:func:`papertrack.registry.rank_key`: temporal-holdout label top-3 when
    the runs have it, else the shift holdout's, else the cross-validated one; then the tie-breaker)."""
    experiment = mlflow.get_experiment_by_name(EXPERIMENT_NAME)
    if experiment is None:
        return pd.DataFrame()
    filter_string = "tags.`papertrack.kind` = 'candidate'"
    if latest_sweep_only:
        sweeps = mlflow.search_runs(
            [experiment.experiment_id],
            "tags.`papertrack.kind` = 'sweep'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        if sweeps.empty:
            return pd.DataFrame()
        filter_string += f" and tags.`mlflow.parentRunId` = '{sweeps.iloc[0]['run_id']}'"
    runs = mlflow.search_runs(
        [experiment.experiment_id], filter_string, order_by=["attributes.start_time DESC"], max_results=max(limit, 1000)
    )
    if runs.empty:
        return runs
    table = pd.DataFrame(
        {
            "run_id": runs["run_id"],
            "candidate": runs["tags.candidate"],
            "family": runs["tags.family"],
            "started": runs["start_time"],
            "data_digest": runs.get("params.data_digest"),
        }
    )
    for column in COLUMNS:
        table[column] = runs.get(f"metrics.{column}")
    keys = [
        rank_key({k: v for k, v in row.items() if v == v and v is not None})
        for row in table[list(COLUMNS)].to_dict("records")
    ]
    table = table.iloc[sorted(range(len(table)), key=lambda i: keys[i], reverse=True)]
    return table.head(limit).reset_index(drop=True)
