"""The leaderboard of candidate runs, read back from MLflow with ``mlflow.search_runs``."""

from __future__ import annotations

import mlflow
import pandas as pd

from papertrack.registry import PRIMARY_METRIC, TIEBREAK_METRIC
from papertrack.settings import EXPERIMENT_NAME

COLUMNS = ("label_top3", "label_top1", "label_macro_f1", "area_top1", "area_macro_f1", "log_loss", "ece",
           "fit_seconds", "predict_ms_per_abstract")


def leaderboard(latest_sweep_only: bool = True, limit: int = 50) -> pd.DataFrame:
    """Candidate runs, best first (primary metric, then the tie-breaker)."""
    experiment = mlflow.get_experiment_by_name(EXPERIMENT_NAME)
    if experiment is None:
        return pd.DataFrame()
    filter_string = "tags.`papertrack.kind` = 'candidate'"
    if latest_sweep_only:
        sweeps = mlflow.search_runs([experiment.experiment_id], "tags.`papertrack.kind` = 'sweep'",
                                    order_by=["attributes.start_time DESC"], max_results=1)
        if sweeps.empty:
            return pd.DataFrame()
        filter_string += f" and tags.`mlflow.parentRunId` = '{sweeps.iloc[0]['run_id']}'"
    runs = mlflow.search_runs([experiment.experiment_id], filter_string,
                              order_by=[f"metrics.{PRIMARY_METRIC} DESC", f"metrics.{TIEBREAK_METRIC} DESC"],
                              max_results=limit)
    if runs.empty:
        return runs
    table = pd.DataFrame({"run_id": runs["run_id"], "candidate": runs["tags.candidate"],
                          "family": runs["tags.family"], "started": runs["start_time"]})
    for column in COLUMNS:
        table[column] = runs.get(f"metrics.{column}")
    return table.reset_index(drop=True)
