"""Every setting papertrack reads from the environment, in one frozen object.

:data:`VARIABLES` lists them (name, default, meaning); :func:`markdown_table` renders that list as the table of
docs/reference.md ("Where things are kept"; ``python -m papertrack.settings`` prints it and
``tests/cli/test_settings.py`` fails when the page disagrees). :func:`current` reads them at call time (tests and
the CLI change the environment between calls).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from papertrack.errors import PapertrackError

MODEL_NAME = "papertrack"
EXPERIMENT_NAME = "papertrack"
DEFAULT_SEED = 42
CHAMPION = "champion"
CHALLENGER = "challenger"

DATA_DIR_ENV = "PAPERTRACK_DATA_DIR"
HOME_ENV = "PAPERTRACK_HOME"
EMBEDDING_CACHE_ENV = "PAPERTRACK_EMBEDDING_CACHE"
TORCH_THREADS_ENV = "PAPERTRACK_TORCH_THREADS"
BENTO_MODEL_ENV = "PAPERTRACK_BENTO_MODEL"
WORKERS_ENV = "PAPERTRACK_WORKERS"
ACCESS_LOG_ENV = "PAPERTRACK_ACCESS_LOG"
TRACE_ENV = "PAPERTRACK_TRACE_PREDICTIONS"
ALLOWED_HOSTS_ENV = "PAPERTRACK_ALLOWED_HOSTS"
PLOTS_ENV = "PAPERTRACK_PLOTS"
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
MAX_INPUT_BYTES_ENV = "PAPERTRACK_MAX_INPUT_BYTES"  # read by the input readers (features/)
BENTOML_HOME_ENV = "BENTOML_HOME"  # BentoML's own; papertrack passes it on
SAFE_STORES_ENV = "PAPERTRACK_SAFE_STORES"  # stores found above the working directory that are used though not yours

# which candidates' runs of a sweep get the four evaluation plots (~1 s of drawing each): the winner and the runner-up,
# every candidate, or none (no plots at all: the winner's risk-coverage plot neither; the per-class report CSV and the
# calibration's JSON are always logged)
PLOT_CHOICES = ("top2", "all", "none")
DEFAULT_PLOTS = "top2"


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, its default (markdown) and what it sets (markdown)."""

    name: str
    default: str
    meaning: str


VARIABLES: tuple[Variable, ...] = (
    Variable(
        DATA_DIR_ENV,
        "`../shared/data` (from the working directory)",
        "the shared data folder (`--data` overrides per command)",
    ),
    Variable(
        HOME_ENV,
        "the nearest `.papertrack/` holding `mlflow.db`, from the working directory up; else `./.papertrack`",
        "MLflow sqlite store `mlflow.db`, artifacts `artifacts/`, embedding cache",
    ),
    Variable(
        SAFE_STORES_ENV,
        "none",
        "`.papertrack` folders (separated by `:`; `*`: any) used when found from the working directory up although "
        "another user owns them or others can write them (as git's `safe.directory`)",
    ),
    Variable(EMBEDDING_CACHE_ENV, "`<home>/embedding-cache`", "sentence-embedding cache folder; `off` disables it"),
    Variable(TORCH_THREADS_ENV, "the CPUs this process may use", "torch threads for embedding"),
    Variable(
        BENTO_MODEL_ENV,
        "`papertrack:latest`",
        "BentoML model tag the service loads (set by `papertrack serve` / `build`)",
    ),
    Variable(WORKERS_ENV, "`1`", "service worker processes (set by `papertrack serve --workers`)"),
    Variable(ACCESS_LOG_ENV, "`false`", "the service's access log (set by `papertrack serve --access-log`)"),
    Variable(TRACE_ENV, "`false`", "OpenTelemetry spans for prediction routes"),
    Variable(
        ALLOWED_HOSTS_ENV,
        "none (loopback names only)",
        "extra `Host` names the service answers, comma-separated (`*`: any)",
    ),
    Variable(
        MAX_INPUT_BYTES_ENV,
        "`8589934592` (8 GiB)",
        "most bytes of text one input file may hold once decompressed",
    ),
    Variable(
        TRACKING_URI_ENV,
        "`sqlite:///<home>/mlflow.db`",
        "a user-set value wins (e.g. a team server); with a database URI the artifacts still go to "
        "`<home>/artifacts`, never the working directory",
    ),
    Variable(BENTOML_HOME_ENV, "`~/bentoml`", "BentoML's model store"),
    Variable(
        PLOTS_ENV,
        "`top2`",
        "which candidates' runs `train` draws the four evaluation plots for: `top2` (the winner and the runner-up), "
        "`all` or `none` (no plots at all, the winner's risk-coverage plot neither; `train --plots` overrides)",
    ),
)


def markdown_table() -> str:
    """:data:`VARIABLES` as the README's markdown table (header included, one line per variable)."""
    lines = ["| variable | default | what |", "|---|---|---|"]
    lines += [f"| `{v.name}` | {v.default} | {v.meaning} |" for v in VARIABLES]
    return "\n".join(lines) + "\n"


_OFF = ("", "0", "off", "none", "false", "no")


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    home: Path
    embedding_cache: Path | None  # None: no disk cache
    torch_threads: int | None
    bento_model: str | None
    workers: int
    access_log: bool
    trace_predictions: bool
    user_tracking_uri: str | None  # MLFLOW_TRACKING_URI when the user (not papertrack) set it
    allowed_hosts: tuple[str, ...] = ()  # Host names the service answers besides the loopback ones
    plots: str | None = None  # PAPERTRACK_PLOTS as set (train reads it with plot_choice: only train uses it)
    # how ``home`` was chosen: "env" (PAPERTRACK_HOME), "found" (the nearest .papertrack/mlflow.db from the working
    # directory up) or "new" (none found: ./.papertrack, where ``train`` creates one)
    home_source: str = "env"

    @property
    def tracking_uri(self) -> str:
        """The user's MLFLOW_TRACKING_URI if set, else an absolute sqlite URI under home."""
        return self.user_tracking_uri or f"sqlite:///{self.home / 'mlflow.db'}"

    @property
    def artifact_root(self) -> Path:
        return self.home / "artifacts"


def _flag(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in _OFF


def _int(name: str, value: str | None, default: int | None) -> int | None:
    if value is None or not value.strip():
        return default
    try:
        return int(value)
    except ValueError:
        from papertrack.errors import UsageError

        raise UsageError(f"{name} must be a whole number, got {value!r}") from None


def plot_choice(name: str, value: str | None) -> str:
    """``value`` (of the setting or option ``name``) as one of :data:`PLOT_CHOICES`; unset: :data:`DEFAULT_PLOTS`."""
    if value is None or not value.strip():
        return DEFAULT_PLOTS
    choice = value.strip().lower()
    if choice not in PLOT_CHOICES:
        from papertrack.errors import UsageError

        raise UsageError(f"{name} must be one of {', '.join(PLOT_CHOICES)}, got {value!r}")
    return choice


STORE_FOLDER = ".papertrack"  # the store's folder, looked for from the working directory up (as git finds .git)
STORE_DATABASE = "mlflow.db"  # what makes a folder a store


class UnsafeStore(PapertrackError):
    """A ``.papertrack`` found from the working directory up that another user owns or others can write: loading
    its models would run their code as you."""


def find_store(start: Path, safe: tuple[str, ...] = ()) -> Path | None:
    """The nearest ``.papertrack`` folder holding ``mlflow.db`` in ``start`` or a folder above it, else None.

    As git does for repositories (``safe.directory``, CVE-2022-24765): a store found there that another user owns,
    or that others can write, is refused (:class:`UnsafeStore`, naming it, its owner and the ways out) unless
    ``safe`` (``PAPERTRACK_SAFE_STORES``) lists it; and the walk stops below a folder that others can write or that
    is sticky (``/tmp``): a store in such a folder (or above it) is never used from a folder under it."""
    for folder in (start, *start.parents):
        if folder != start and _shared_folder(folder):
            return None
        candidate = folder / STORE_FOLDER
        if (candidate / STORE_DATABASE).is_file():
            problem = _not_yours(candidate)
            if problem and "*" not in safe and str(candidate) not in {str(Path(p).expanduser()) for p in safe}:
                raise _unsafe(candidate, problem)
            return candidate
    return None


def _shared_folder(folder: Path) -> bool:
    """Others may create entries in it: world-writable or sticky (``/tmp``, ``/var/tmp``, a shared scratch)."""
    import stat

    try:
        mode = folder.stat().st_mode
    except OSError:
        return True  # cannot tell: do not look further up
    return bool(mode & (stat.S_IWOTH | stat.S_ISVTX))


def _not_yours(store: Path) -> str | None:
    """Why ``store`` is not safe to load models from, or None: it, its database or its artifacts folder is owned by
    another user, or writable by group or others."""
    import stat

    for path in (store, store / STORE_DATABASE, store / "artifacts"):
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if info.st_uid != os.geteuid():
            return f"{path} is owned by {_owner(info.st_uid)}, not by you ({_owner(os.geteuid())})"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not stat.S_ISLNK(info.st_mode):
            return f"{path} can be written by {'others' if info.st_mode & stat.S_IWOTH else 'its group'}"
    return None


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _unsafe(store: Path, problem: str) -> UnsafeStore:
    return UnsafeStore(
        f"refusing the papertrack store {store}, found above {Path.cwd()}: {problem}; loading its models would run "
        f"code someone else wrote. Use your own store: run in your project's folder or export {HOME_ENV}=<your "
        f".papertrack folder>; or, if you trust this one, export {SAFE_STORES_ENV}={store}"
    )


def _home(env) -> tuple[Path, str]:
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser().resolve(), "env"
    here = Path.cwd().resolve()
    safe = tuple(p.strip() for p in env.get(SAFE_STORES_ENV, "").split(os.pathsep) if p.strip())
    found = find_store(here, safe)
    return (found, "found") if found is not None else (here / STORE_FOLDER, "new")


def current() -> Settings:
    env = os.environ
    home, home_source = _home(env)
    cache_value = env.get(EMBEDDING_CACHE_ENV)
    if cache_value is not None and cache_value.strip().lower() in _OFF:
        cache = None
    else:
        cache = Path(cache_value).expanduser().resolve() if cache_value else home / "embedding-cache"
    uri = env.get(TRACKING_URI_ENV)
    return Settings(
        data_dir=Path(env.get(DATA_DIR_ENV, "../shared/data")).expanduser().resolve(),
        home=home,
        embedding_cache=cache,
        torch_threads=_int(TORCH_THREADS_ENV, env.get(TORCH_THREADS_ENV), None),
        bento_model=env.get(BENTO_MODEL_ENV) or None,
        workers=_int(WORKERS_ENV, env.get(WORKERS_ENV), 1) or 1,
        access_log=_flag(env.get(ACCESS_LOG_ENV)),
        trace_predictions=_flag(env.get(TRACE_ENV)),
        user_tracking_uri=uri or None,
        allowed_hosts=tuple(h.strip() for h in env.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()),
        home_source=home_source,
        plots=env.get(PLOTS_ENV) or None,
    )


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


if __name__ == "__main__":  # python -m papertrack.settings: the README's table
    import sys

    sys.stdout.write(markdown_table())
