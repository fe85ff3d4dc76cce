"""The MLflow store both training and serving talk to: where it is and how to reach it.

Default: a sqlite store under ``PAPERTRACK_HOME`` with artifacts in ``<home>/artifacts``. Without
``PAPERTRACK_HOME``, the store is the nearest ``.papertrack/`` holding ``mlflow.db`` in the working directory or a
folder above it (as git finds ``.git``), so every folder of a project uses the project's store; ``train`` creates
``./.papertrack`` when there is none. As git does for repositories, a store found above the working directory that
another user owns or others can write is refused, and the walk never goes past a folder others can write (``/tmp``):
:func:`papertrack.settings.find_store`. A store found in a folder above the working directory is named on stderr.
A command that only reads (``label``, ``suggest``, ``serve``, ``build``, ``runs``, ``ui``, ``papertrack.load()``)
never creates a store: outside any project it raises :class:`NoStore` saying where it looked (there is no per-user
"last store": it would silently switch a command to another checkout's model). A user-set
``MLFLOW_TRACKING_URI`` wins; for a database URI (sqlite, postgresql, ...) the experiment's artifacts
still go under ``PAPERTRACK_HOME`` (never the working directory), for a tracking server (http/https)
they go to the server's artifact store.

A tracking server is probed once (one request, a short timeout, no retries) before MLflow's own client,
which retries for minutes, is used: a server that is down, or whose database is down, is reported as
:class:`TrackingServerUnreachable` ("cannot reach the tracking server at …") instead of a long hang.

State is passed, not set: :func:`open` decides the store from the environment and returns a frozen :class:`Store`
(its URIs, where new experiments keep their artifacts, how it was chosen); only the CLI's commands and
``papertrack.load()`` call it. Library code takes that value and talks to MLflow through ``store.client()``
(an ``MlflowClient`` on the store's URIs). MLflow's process-wide tracking and registry URIs are set only inside
:func:`using`, for the few MLflow calls that read nothing else (``mlflow.pyfunc.log_model``/``load_model``,
``mlflow.register_model``), and put back on leaving it. Two stores in one process work side by side.
"""

from __future__ import annotations

import builtins
import dataclasses
import errno
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from papertrack import settings
from papertrack.errors import NoModelError, PapertrackError

if TYPE_CHECKING:  # MLflow (~2 s to import) only where a command talks to it: a cached read never does
    from mlflow.tracking import MlflowClient

logger = logging.getLogger(__name__)

PROBE_TIMEOUT = 10.0  # seconds for the one reachability request to a tracking server


class TrackingServerUnreachable(PapertrackError):
    """The tracking server (or the database behind it) does not answer."""


class StoreNotWritable(PapertrackError):
    """The store's folder (``PAPERTRACK_HOME``) or its database cannot be written."""


class NoStore(NoModelError):
    """A command that reads found no store (it never creates one); the message says where it looked."""


@dataclass(frozen=True)
class Store:
    """One MLflow store, as a value: pass it to the library code that reads or writes it.

    ``chosen`` says how :func:`open` found it: ``user`` (MLFLOW_TRACKING_URI), ``env`` (PAPERTRACK_HOME),
    ``found`` (the nearest .papertrack from the working directory up) or ``new`` (./.papertrack, created by
    ``train``)."""

    tracking_uri: str
    registry_uri: str
    artifact_location: str | None  # where the experiment keeps its artifacts when papertrack creates it
    home: Path  # PAPERTRACK_HOME for this store (the embedding cache, the artifacts of a database URI)
    chosen: str = "env"

    @classmethod
    def of(cls, current: settings.Settings, chosen: str | None = None) -> Store:
        """The store ``current`` settings name (no I/O)."""
        uri = current.tracking_uri
        server = uri.startswith(("http://", "https://", "databricks"))
        return cls(
            tracking_uri=uri,
            registry_uri=uri,
            artifact_location=None if server else current.artifact_root.as_uri(),
            home=current.home,
            chosen=chosen or ("user" if current.user_tracking_uri is not None else current.home_source),
        )

    @property
    def is_server(self) -> bool:
        return self.tracking_uri.startswith(("http://", "https://"))

    def client(self) -> MlflowClient:
        """An MLflow client on this store (MLflow's process-wide URIs are not read)."""
        from mlflow.tracking import MlflowClient

        return MlflowClient(tracking_uri=self.tracking_uri, registry_uri=self.registry_uri)

    def experiment(self):
        """papertrack's experiment in this store, or None when there is none yet."""
        return self.client().get_experiment_by_name(settings.EXPERIMENT_NAME)

    def environment(self) -> dict[str, str]:
        """What a subprocess (Spark, ``bentoml serve``) must be given to use this same store."""
        env = {settings.HOME_ENV: str(self.home)}
        if self.chosen == "user":
            env[settings.TRACKING_URI_ENV] = self.tracking_uri
        return env

    def where(self) -> str:
        """The store and how it was chosen, for messages: ``/p/.papertrack (the nearest .papertrack above /p)``."""
        if self.chosen == "user":
            return f"{self.tracking_uri} ({settings.TRACKING_URI_ENV})"
        how = {
            "env": settings.HOME_ENV,
            "found": f"the nearest {settings.STORE_FOLDER} from {Path.cwd()} up",
            "new": "new",
        }[self.chosen]
        return f"{self.home} ({how})"

    def size_line(self) -> str | None:
        """What this store takes on disk, for ``train``'s last line: its database and artifacts under ``home``
        (None for a server or another database: they are not files here). Nothing is pruned but by ``papertrack gc``."""
        database = self.home / "mlflow.db"
        if self.tracking_uri != f"sqlite:///{database}":
            return None
        artifacts = self.home / "artifacts"
        files = [database, *(artifacts.rglob("*") if artifacts.is_dir() else [])]
        size = sum(_file_size(path) for path in files)
        return (
            f"The store holds {size / 2**20:,.1f} MB ({self.home}): every run and version is kept "
            f"(`papertrack runs --all` lists them; `papertrack gc` removes the model files of versions that serve "
            f"nothing)."
        )


def _file_size(path: Path) -> int:
    """A regular file's size; 0 for a link, a folder or a file gone meanwhile (another writer's run)."""
    try:
        return path.stat().st_size if path.is_file() and not path.is_symlink() else 0
    except OSError:
        return 0


@contextmanager
def using(store: Store) -> Iterator[Store]:
    """MLflow's process-wide tracking and registry URIs point at ``store`` inside the ``with`` block and are put back
    as they were on leaving it, error or not (the environment is left as it is: nothing is exported).

    The one place papertrack touches MLflow's globals, for the calls that read nothing else:
    ``mlflow.pyfunc.log_model`` / ``load_model``, ``mlflow.register_model``, ``bentoml.mlflow.import_model``. Keep
    the block small; everything else takes ``store.client()``. Not for threads that use different stores at once."""
    import mlflow

    saved = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    _point_mlflow_at(store.tracking_uri, store.registry_uri)
    try:
        yield store
    finally:
        _point_mlflow_at(*saved)


def _point_mlflow_at(tracking_uri: str, registry_uri: str) -> None:
    """MLflow's process-wide URIs, without the MLFLOW_TRACKING_URI / MLFLOW_REGISTRY_URI that
    ``mlflow.set_tracking_uri`` also exports (papertrack would later read that as the user's choice)."""
    import mlflow

    names = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")
    saved_env = {name: os.environ.get(name) for name in names}
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_registry_uri(registry_uri)
    for name, value in saved_env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ.update({name: value})


def _for_reading(current: settings.Settings) -> Store:
    """The store a read command uses; NoStore when there is none (nothing is created)."""
    if current.user_tracking_uri is not None or (current.home / settings.STORE_DATABASE).is_file():
        return Store.of(current)
    if current.home_source == "new":
        raise NoStore(
            f"no papertrack store found: no {settings.STORE_FOLDER}/{settings.STORE_DATABASE} in {Path.cwd()} or a "
            f"folder above it (the search stops below folders others can write, such as /tmp). Run `papertrack "
            f"train` in your project's folder, run this command there, or set {settings.HOME_ENV} to the "
            f"{settings.STORE_FOLDER} folder that holds {settings.STORE_DATABASE}"
        )
    raise NoStore(
        f"no papertrack store at {current.home} ({settings.HOME_ENV}): it has no {settings.STORE_DATABASE}. Run "
        f"`papertrack train` to create one there, or point {settings.HOME_ENV} at the {settings.STORE_FOLDER} folder "
        f"that holds {settings.STORE_DATABASE} (unset, papertrack looks from the working directory up)"
    )


def _say_where(store: Store) -> None:
    """Name the store on stderr when it is not the working folder's own (found in a folder above it)."""
    if store.chosen == "found" and store.home.parent != Path.cwd().resolve():
        logger.warning("using the papertrack store %s", store.where())


def open(  # noqa: A001 - store.open()
    create: bool = True, current: settings.Settings | None = None, home: Path | str | None = None
) -> Store:
    """The store papertrack's settings (default: the environment's, now) name, checked, as a :class:`Store`.

    Called by the CLI's commands and ``papertrack.load()`` only; library code is given the value. ``create=False``
    (commands that only read): nothing is created — no folder, database or experiment; no store is
    :class:`NoStore` (see the module doc). With ``create``, a sqlite store is created (schema and experiment)
    under an exclusive lock on ``<db>.lock``: two commands started at once on a new store used to both create
    MLflow's tables ("table registered_model_tags already exists"). A folder or database that cannot be written is
    one :class:`StoreNotWritable` naming it.
    MLflow's process-wide URIs are not touched. ``home``: the store in that folder (a ``.papertrack`` folder; as if
    PAPERTRACK_HOME named it, whatever the environment says about the store), e.g. to use two stores side by side.
    """
    settings.quiet_third_parties()
    current = current or settings.current()
    if home is not None:
        folder = Path(home).expanduser().resolve()
        current = dataclasses.replace(current, home=folder, home_source="env", user_tracking_uri=None)
    store = Store.of(current) if create else _for_reading(current)
    uri = store.tracking_uri
    database = Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None
    try:
        if database is not None and create:
            database.parent.mkdir(parents=True, exist_ok=True)
        if store.is_server:
            check_tracking_server(uri)
        _say_where(store)
        if not create:
            return store
        with _creating(database):
            client = store.client()  # MLflow's client opens the store at once: a new sqlite one is created here
            if client.get_experiment_by_name(settings.EXPERIMENT_NAME) is None:
                if store.artifact_location is not None:
                    (store.home / "artifacts").mkdir(parents=True, exist_ok=True)
                _create_experiment(client, store.artifact_location)
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST):
            raise
        raise StoreNotWritable(_not_writable(exc.filename or store.home, exc.strerror)) from None
    except Exception as exc:  # sqlalchemy's OperationalError: "attempt to write a readonly database", ...
        if database is not None and ("readonly database" in str(exc) or "unable to open database" in str(exc)):
            raise StoreNotWritable(_not_writable(database, "the database cannot be written")) from None
        raise
    return store


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

    with builtins.open(database.with_name(database.name + ".lock"), "a") as lock:  # this module's open() opens stores
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _create_experiment(client: MlflowClient, location: str | None) -> None:
    """Create the experiment; another process having just created it (a tracking server) is fine."""
    from mlflow.exceptions import MlflowException

    try:
        client.create_experiment(settings.EXPERIMENT_NAME, artifact_location=location)
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
