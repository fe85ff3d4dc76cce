"""The MLflow store both training and serving talk to: where it is and how to reach it.

Default: a sqlite store under ``PAPERTRACK_HOME`` with artifacts in ``<home>/artifacts``. A user-set
``MLFLOW_TRACKING_URI`` wins; for a database URI (sqlite, postgresql, ...) the experiment's artifacts
still go under ``PAPERTRACK_HOME`` (never the working directory), for a tracking server (http/https)
they go to the server's artifact store.
"""

from __future__ import annotations

from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient

from papertrack import settings


def configure() -> str:
    """Point MLflow at papertrack's store and make sure the experiment exists; returns the URI."""
    settings.quiet_third_parties()
    current = settings.current()
    uri = current.tracking_uri
    if uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    if current.user_tracking_uri is None:
        settings.remember_tracking_uri(uri)
    if mlflow.get_experiment_by_name(settings.EXPERIMENT_NAME) is None:
        location = None
        if not uri.startswith(("http://", "https://", "databricks")):
            current.artifact_root.mkdir(parents=True, exist_ok=True)
            location = current.artifact_root.as_uri()
        mlflow.create_experiment(settings.EXPERIMENT_NAME, artifact_location=location)
    mlflow.set_experiment(settings.EXPERIMENT_NAME)
    return uri


def client() -> MlflowClient:
    return MlflowClient(tracking_uri=mlflow.get_tracking_uri(), registry_uri=mlflow.get_registry_uri())
