"""The MLflow store both training and serving talk to: where it is and how to reach it.

Default: a sqlite store under ``PAPERTRACK_HOME`` with artifacts in ``<home>/artifacts``. A user-set
``MLFLOW_TRACKING_URI`` wins; for a database URI (sqlite, postgresql, ...) the experiment's artifacts
still go under ``PAPERTRACK_HOME`` (never the working directory), for a tracking server (http/https)
they go to the server's artifact store.

A tracking server is probed once (one request, a short timeout, no retries) before MLflow's own client,
which retries for minutes, is used: a server that is down, or whose database is down, is reported as
:class:`TrackingServerUnreachable` ("cannot reach the tracking server at …") instead of a long hang.
"""

from __future__ import annotations

import errno
from contextlib import contextmanager
from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient

from papertrack import settings
from papertrack.errors import PapertrackError

PROBE_TIMEOUT = 10.0  # seconds for the one reachability request to a tracking server


class TrackingServerUnreachable(PapertrackError):
    """The tracking server (or the database behind it) does not answer."""


class StoreNotWritable(PapertrackError):
    """The store's folder (``PAPERTRACK_HOME``) or its database cannot be written."""


def configure() -> str:
    """Point MLflow at papertrack's store and make sure the experiment exists; returns the URI.

    A sqlite store is created (schema and experiment) under an exclusive lock on ``<db>.lock``: two commands
    started at once on a new store used to both create MLflow's tables ("table registered_model_tags already
    exists"). A folder or database that cannot be written is one :class:`StoreNotWritable` naming it.
    """
    settings.quiet_third_parties()
    current = settings.current()
    uri = current.tracking_uri
    database = Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None
    try:
        if database is not None:
            database.parent.mkdir(parents=True, exist_ok=True)
        if uri.startswith(("http://", "https://")):
            check_tracking_server(uri)
        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        if current.user_tracking_uri is None:
            settings.remember_tracking_uri(uri)
        with _creating(database):
            if mlflow.get_experiment_by_name(settings.EXPERIMENT_NAME) is None:
                location = None
                if not uri.startswith(("http://", "https://", "databricks")):
                    current.artifact_root.mkdir(parents=True, exist_ok=True)
                    location = current.artifact_root.as_uri()
                _create_experiment(location)
        mlflow.set_experiment(settings.EXPERIMENT_NAME)
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST):
            raise
        raise StoreNotWritable(_not_writable(exc.filename or current.home, exc.strerror)) from None
    except Exception as exc:  # sqlalchemy's OperationalError: "attempt to write a readonly database", ...
        if database is not None and ("readonly database" in str(exc) or "unable to open database" in str(exc)):
            raise StoreNotWritable(_not_writable(database, "the database cannot be written")) from None
        raise
    return uri


def _not_writable(path, why: str | None) -> str:
    return (
        f"cannot write the papertrack store at {path} ({why or 'permission denied'}); make PAPERTRACK_HOME a "
        f"folder you can write (e.g. export PAPERTRACK_HOME=~/.papertrack) or fix its permissions"
    )


@contextmanager
def _creating(database: Path | None):
    """An exclusive lock on ``<database>.lock`` while the store is created (nothing for other stores)."""
    if database is None:
        yield
        return
    import fcntl

    with open(database.with_name(database.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _create_experiment(location: str | None) -> None:
    """Create the experiment; another process having just created it (a tracking server) is fine."""
    from mlflow.exceptions import MlflowException

    try:
        mlflow.create_experiment(settings.EXPERIMENT_NAME, artifact_location=location)
    except MlflowException as exc:
        if "RESOURCE_ALREADY_EXISTS" not in str(exc.error_code) and "already exists" not in str(exc):
            raise


def check_tracking_server(uri: str, timeout: float = PROBE_TIMEOUT) -> None:
    """One tracking-API request (the experiment look-up every command makes first): raise
    TrackingServerUnreachable when the server does not answer or fails it (e.g. its database is down)."""
    import httpx

    where = f"cannot reach the tracking server at {uri}"
    try:
        response = httpx.get(
            uri.rstrip("/") + "/api/2.0/mlflow/experiments/get-by-name",
            params={"experiment_name": settings.EXPERIMENT_NAME},
            timeout=timeout,
        )
    except httpx.HTTPError as exc:
        raise TrackingServerUnreachable(
            f"{where} ({type(exc).__name__}: {exc or 'no answer'}). Start it "
            f"(`papertrack tracking-server`) or fix MLFLOW_TRACKING_URI."
        ) from None
    if response.status_code == 200 or (response.status_code == 404 and "RESOURCE_DOES_NOT_EXIST" in response.text):
        return
    detail = _server_error(response)
    hint = " (is its database up?)" if response.status_code >= 500 else ""
    raise TrackingServerUnreachable(f"{where}: it answered {response.status_code}{hint}: {detail}")


def _server_error(response) -> str:
    try:
        message = str(response.json().get("message", ""))
    except ValueError:
        message = response.text
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return (lines[0] if lines else response.reason_phrase)[:300]


def client() -> MlflowClient:
    return MlflowClient(tracking_uri=mlflow.get_tracking_uri(), registry_uri=mlflow.get_registry_uri())
