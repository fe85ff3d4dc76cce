"""Every setting papertrack reads from the environment, in one frozen object.

| variable | default | what |
|---|---|---|
| ``PAPERTRACK_DATA_DIR`` | ``../shared/data`` (from the working directory) | the shared data folder |
| ``PAPERTRACK_HOME`` | ``./.papertrack`` | MLflow sqlite store, artifacts, embedding cache |
| ``PAPERTRACK_EMBEDDING_CACHE`` | ``<home>/embedding-cache`` (``off`` disables it) | sentence-embedding cache |
| ``PAPERTRACK_TORCH_THREADS`` | torch's default | threads torch may use for embedding |
| ``PAPERTRACK_BENTO_MODEL`` | ``papertrack:latest`` | BentoML model tag the service loads |
| ``PAPERTRACK_WORKERS`` | ``1`` | service worker processes (set by ``papertrack serve``) |
| ``PAPERTRACK_ACCESS_LOG`` | ``false`` | the service's access log (set by ``papertrack serve``) |
| ``PAPERTRACK_TRACE_PREDICTIONS`` | ``false`` | log each prediction's timing in the service |
| ``PAPERTRACK_ALLOWED_HOSTS`` | none (loopback names only) | extra ``Host`` names the service answers (``*``: any) |
| ``MLFLOW_TRACKING_URI`` | ``sqlite:///<home>/mlflow.db`` | MLflow's own variable: a user-set value wins |

:func:`current` reads them at call time (tests and the CLI change the environment between calls).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

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
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"

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

    @property
    def tracking_uri(self) -> str:
        """The user's MLFLOW_TRACKING_URI if set, else an absolute sqlite URI under home."""
        return self.user_tracking_uri or f"sqlite:///{self.home / 'mlflow.db'}"

    @property
    def artifact_root(self) -> Path:
        return self.home / "artifacts"


_uri_set_by_papertrack: str | None = None


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


def current() -> Settings:
    env = os.environ
    home = Path(env.get(HOME_ENV, ".papertrack")).expanduser().resolve()
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
        user_tracking_uri=uri if uri and uri != _uri_set_by_papertrack else None,
        allowed_hosts=tuple(h.strip() for h in env.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()),
    )


def remember_tracking_uri(uri: str) -> None:
    """``mlflow.set_tracking_uri`` exports MLFLOW_TRACKING_URI itself; a value papertrack put there
    is not mistaken for the user's choice."""
    global _uri_set_by_papertrack
    _uri_set_by_papertrack = uri


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
