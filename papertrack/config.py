"""Where papertrack reads data and keeps its MLflow store — one place, overridable by environment variables.

- ``PAPERTRACK_DATA_DIR``: the shared data folder (default ``../shared/data`` from the working directory).
- ``PAPERTRACK_HOME``: the project-local state folder (default ``./.papertrack``) holding the MLflow
  sqlite store ``mlflow.db`` and the artifact folder ``artifacts/``.
- ``MLFLOW_TRACKING_URI``: the standard MLflow variable; when set (e.g. a team server) it wins over
  the embedded store.
"""

from __future__ import annotations

import os
from pathlib import Path

MODEL_NAME = "papertrack"
EXPERIMENT_NAME = "papertrack"
DEFAULT_SEED = 42


def data_dir() -> Path:
    return Path(os.environ.get("PAPERTRACK_DATA_DIR", "../shared/data")).expanduser().resolve()


def default_training_data() -> Path:
    return data_dir() / "iclr2024_topics.jsonl"


def home() -> Path:
    return Path(os.environ.get("PAPERTRACK_HOME", ".papertrack")).expanduser().resolve()


_uri_set_by_papertrack: str | None = None


def tracking_uri() -> str:
    """The MLflow tracking URI: ``MLFLOW_TRACKING_URI`` if the user set it, else an absolute sqlite
    URI under home(). (``mlflow.set_tracking_uri`` exports MLFLOW_TRACKING_URI itself; a value that
    papertrack put there is not mistaken for the user's choice.)"""
    if user_tracking_uri_set():
        return os.environ["MLFLOW_TRACKING_URI"]
    return f"sqlite:///{home() / 'mlflow.db'}"


def user_tracking_uri_set() -> bool:
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    return bool(uri) and uri != _uri_set_by_papertrack


def remember_tracking_uri(uri: str) -> None:
    global _uri_set_by_papertrack
    _uri_set_by_papertrack = uri


def artifact_root() -> Path:
    return home() / "artifacts"


def quiet_third_parties() -> None:
    """Telemetry off and no model hub look-ups: papertrack never needs the network."""
    for key, value in {
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "BENTOML_DO_NOT_TRACK": "true",
        "DO_NOT_TRACK": "true",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    }.items():
        os.environ.setdefault(key, value)
