"""The MLflow store both training and serving talk to: where it is and how to reach it.

Default: a sqlite store under ``PAPERTRACK_HOME`` with artifacts in ``<home>/artifacts``. Without
``PAPERTRACK_HOME``, the store is the nearest ``.papertrack/`` holding ``mlflow.db`` in the working directory or a
folder above it (as git finds ``.git``), so every folder of a project uses the project's store; ``train`` creates
``./.papertrack`` when there is none. A command that only reads (``label``, ``suggest``, ``serve``, ``build``,
``runs``, ``ui``, ``papertrack.load()``) never creates a store: outside any project it uses the store
``train`` last wrote to (recorded per user, :func:`recorded_store`), else it raises :class:`NoStore` saying where it
looked. A user-set
``MLFLOW_TRACKING_URI`` wins; for a database URI (sqlite, postgresql, ...) the experiment's artifacts
still go under ``PAPERTRACK_HOME`` (never the working directory), for a tracking server (http/https)
they go to the server's artifact store.

A tracking server is probed once (one request, a short timeout, no retries) before MLflow's own client,
which retries for minutes, is used: a server that is down, or whose database is down, is reported as
:class:`TrackingServerUnreachable` ("cannot reach the tracking server at …") instead of a long hang.
"""

from __future__ import annotations

import errno
import logging
import os
from contextlib import contextmanager
from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient

from papertrack import settings
from papertrack.errors import NoModelError, PapertrackError

logger = logging.getLogger(__name__)

PROBE_TIMEOUT = 10.0  # seconds for the one reachability request to a tracking server


class TrackingServerUnreachable(PapertrackError):
    """The tracking server (or the database behind it) does not answer."""


class StoreNotWritable(PapertrackError):
    """The store's folder (``PAPERTRACK_HOME``) or its database cannot be written."""


class NoStore(NoModelError):
    """A command that reads found no store (it never creates one); the message says where it looked."""


LAST_STORE_FILE = "last-store"  # in the per-user state folder: the store ``train`` last wrote to
_recorded_home: Path | None = None  # the recorded store this process fell back to (then set as PAPERTRACK_HOME)


def recorded_store_file() -> Path:
    """Where ``train`` records the store it wrote to (``~/.local/state/papertrack/last-store`` on Linux)."""
    import platformdirs

    return platformdirs.user_state_path("papertrack") / LAST_STORE_FILE


def recorded_store() -> Path | None:
    """The store ``train`` last wrote to, when it still holds ``mlflow.db``."""
    try:
        home = Path(recorded_store_file().read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    return home if home.is_absolute() and (home / settings.STORE_DATABASE).is_file() else None


def _record_store(home: Path) -> None:
    """Remember ``home`` for read commands run outside any project (best effort: a warning when it cannot)."""
    path = recorded_store_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(f"{home}\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        logger.warning(
            "cannot record the store in %s (%s): outside %s, set %s", path, exc.strerror, home.parent, settings.HOME_ENV
        )


def where(current: settings.Settings | None = None) -> str:
    """The store and how it was chosen, for messages: ``/p/.papertrack (the nearest .papertrack above /p/sub)``."""
    current = current or settings.current()
    if current.user_tracking_uri is not None:
        return f"{current.user_tracking_uri} ({settings.TRACKING_URI_ENV})"
    source = "recorded" if current.home_source == "env" and current.home == _recorded_home else current.home_source
    how = {
        "env": settings.HOME_ENV,
        "found": f"the nearest {settings.STORE_FOLDER} from {Path.cwd()} up",
        "recorded": f"the store `papertrack train` last used, recorded in {recorded_store_file()}",
        "new": "new",
    }[source]
    return f"{current.home} ({how})"


def _open_for_reading() -> settings.Settings:
    """The settings of the store a read command uses; NoStore when there is none (nothing is created)."""
    current = settings.current()
    if current.user_tracking_uri is not None or (current.home / settings.STORE_DATABASE).is_file():
        return current
    if current.home_source == "new":
        recorded = recorded_store()
        if recorded is not None:
            global _recorded_home
            _recorded_home = recorded
            os.environ[settings.HOME_ENV] = str(recorded)  # this process and the ones it starts (Spark, BentoML)
            logger.warning(
                "no %s store in %s or a folder above it; using %s, the store `papertrack train` last used",
                settings.STORE_FOLDER,
                Path.cwd(),
                recorded,
            )
            return settings.current()
        raise NoStore(
            f"no papertrack store found: no {settings.STORE_FOLDER}/{settings.STORE_DATABASE} in {Path.cwd()} or a "
            f"folder above it, and no store recorded by `papertrack train` ({recorded_store_file()}). Run "
            f"`papertrack train` in your project's folder, or set {settings.HOME_ENV} to the {settings.STORE_FOLDER} "
            f"folder that holds {settings.STORE_DATABASE}"
        )
    raise NoStore(
        f"no papertrack store at {current.home} ({settings.HOME_ENV}): it has no {settings.STORE_DATABASE}. Run "
        f"`papertrack train` to create one there, or point {settings.HOME_ENV} at the {settings.STORE_FOLDER} folder "
        f"that holds {settings.STORE_DATABASE} (unset, papertrack looks from the working directory up)"
    )


def configure(create: bool = True) -> str:
    """Point MLflow at papertrack's store and make sure the experiment exists; returns the URI.

    ``create=False`` (commands that only read): nothing is created — no folder, database or experiment; no store
    is :class:`NoStore` (see the module doc). With ``create``, a sqlite store is created (schema and experiment)
    under an exclusive lock on ``<db>.lock``: two commands started at once on a new store used to both create
    MLflow's tables ("table registered_model_tags already exists"), and the store is recorded for read commands run
    outside any project. A folder or database that cannot be written is one :class:`StoreNotWritable` naming it.
    """
    settings.quiet_third_parties()
    current = settings.current() if create else _open_for_reading()
    uri = current.tracking_uri
    database = Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None
    try:
        if database is not None and create:
            database.parent.mkdir(parents=True, exist_ok=True)
        if uri.startswith(("http://", "https://")):
            check_tracking_server(uri)
        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        if current.user_tracking_uri is None:
            settings.remember_tracking_uri(uri)
        if not create:
            if mlflow.get_experiment_by_name(settings.EXPERIMENT_NAME) is not None:
                mlflow.set_experiment(settings.EXPERIMENT_NAME)
            return uri
        with _creating(database):
            if mlflow.get_experiment_by_name(settings.EXPERIMENT_NAME) is None:
                location = None
                if not uri.startswith(("http://", "https://", "databricks")):
                    current.artifact_root.mkdir(parents=True, exist_ok=True)
                    location = current.artifact_root.as_uri()
                _create_experiment(location)
        mlflow.set_experiment(settings.EXPERIMENT_NAME)
        if current.user_tracking_uri is None and current.home_source != "env":
            _record_store(current.home)
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
