"""Where to see the runs in MLflow's UI: the runs table's link (``papertrack runs``, ``train``, ``ui``). Kept apart
from :mod:`papertrack.training.report` so that ``papertrack runs`` imports no training code (scikit-learn,
matplotlib: ~2 s at each start)."""

from __future__ import annotations

from rich.console import Console

# the runs table as papertrack shows it: an experiment tag that MLflow's UI reads as a shared view (the link's
# ``viewStateShareKey``); see :func:`runs_view_url`
RUNS_VIEW_KEY = "papertrack-leaderboard"
SHARED_VIEW_TAG = "mlflow.sharedViewState."

MLFLOW_UI = "http://127.0.0.1:5000"  # where ``mlflow ui`` serves by default


def runs_view_url(base: str, experiment_id: str, view: str | None = None) -> str:
    """The MLflow UI's runs table ("Model training") of an experiment. The UI keeps its GenAI / Model training
    toggle in the browser's localStorage (``mlflow.workflowType``, default GenAI) whatever the experiment's kind
    tag, so a fresh browser opens on the GenAI overview (mlflow/mlflow#24498); the ``workflowType`` query
    parameter overrides the stored toggle. ``view``: the key of a shared view state stored on the experiment
    (the latest sweep's candidates with their metric columns, :func:`~papertrack.training.sweep_logging.runs_view`)."""
    url = f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"
    return url + (f"&viewStateShareKey={view}" if view else "")


def print_runs_link(console: Console, uri: str, experiment_id: str | None, view: str | None = None) -> None:
    """How to see the runs table in MLflow's UI, for the store at ``uri``: the command that serves it (unless
    ``uri`` is a tracking server), then the link on a line of its own, never cut."""
    if uri.startswith(("http://", "https://")):
        console.print("Compare the runs in MLflow's UI, on its runs table:")
        base = uri
    else:
        console.print(
            "Compare the runs in MLflow's UI: papertrack ui (starts it on this store and opens the runs table)"
        )
        base = MLFLOW_UI
    if experiment_id is not None:
        console.print(f"open {runs_view_url(base, experiment_id, view)}", soft_wrap=True, highlight=False)
