"""Every private seam of another library that papertrack (and its tests) reach, in one place.

BentoML, uvicorn and prometheus_client offer no public API for these; each use below names what it touches.
They were checked against the versions in :data:`CHECKED_VERSIONS`; :func:`problems` lists what differs in the
installed libraries (another version, a hook that is gone), and ``tests/serving/test_private_hooks.py`` fails
with that list, so the next upgrade stops at a red test naming the hook instead of breaking silently.

* BentoML (``bentoml._internal``): its configuration container — the home folder, the Prometheus multiprocess
  folder (:mod:`.launch`), a service's merged ``traffic.timeout`` (:mod:`.read_deadline`), the model and bento
  stores and the metrics client (the tests' temporary BentoML home) —, its HTTP metrics middleware
  (:mod:`.middleware`, bounded path labels) and the logger name of its HTTP app (:mod:`.service`).
* uvicorn: the table behind ``--http auto`` (``uvicorn.config.HTTP_PROTOCOLS``: BentoML's workers build their
  ``uvicorn.Config`` themselves, so the protocol cannot be passed in) and the members of its h11 protocol that
  :class:`.read_deadline.RequestDeadlineProtocol` overrides or reads.
* prometheus_client: the collectors of its process-wide registry (``REGISTRY._collector_to_names``; tests only).

Nothing else in the project imports ``bentoml._internal`` or touches these names.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# the versions these hooks were read in and tested against (a prefix: any patch release of it)
CHECKED_VERSIONS = {"bentoml": "1.4.", "uvicorn": "0.54.", "prometheus_client": "0.26."}

BENTOML_CONTAINERS = "bentoml._internal.configuration.containers"
BENTOML_INSTRUMENTS = "bentoml._internal.server.http.instruments"
BENTOML_METRICS_MIDDLEWARE = "RunnerTrafficMetricsMiddleware"  # what _bentoml_impl's app factory imports per app
BENTOML_HTTP_APP_LOGGER = "bentoml._internal.server.http_app"  # logs the 4xx/5xx answers of the API routes
BENTOML_CONTAINER_ENTRIES = (
    "bentoml_home",
    "prometheus_multiproc_dir",
    "config",
    "model_store",
    "bento_store",
    "metrics_client",
)
UVICORN_H11_MEMBERS = (  # RequestDeadlineProtocol overrides the methods and reads the attributes
    "connection_made",
    "data_received",
    "on_response_complete",
    "handle_websocket_upgrade",
    "connection_lost",
)


class PrivateHookMissing(RuntimeError):
    """A private hook is not where it was in the checked version."""


def _missing(what: str, error: Exception) -> PrivateHookMissing:
    return PrivateHookMissing(
        f"{what} is gone ({type(error).__name__}: {error}); serving/http/private_hooks.py was checked against "
        f"{', '.join(f'{name} {version}x' for name, version in CHECKED_VERSIONS.items())}"
    )


# --------------------------------------------------------------------------- BentoML


def bentoml_container() -> Any:
    """BentoML's configuration container (``BentoMLContainer``)."""
    try:
        return importlib.import_module(BENTOML_CONTAINERS).BentoMLContainer
    except (ImportError, AttributeError) as error:
        raise _missing(f"{BENTOML_CONTAINERS}.BentoMLContainer", error) from error


def bentoml_home() -> str:
    """The BentoML home folder this process uses (``BENTOML_HOME`` or BentoML's default)."""
    return str(bentoml_container().bentoml_home.get())


def set_prometheus_multiproc_dir(path: str | Path) -> None:
    """Make BentoML keep this server's Prometheus multiprocess files in ``path``."""
    bentoml_container().prometheus_multiproc_dir.set(str(path))


def service_traffic_timeout(service: str) -> float | None:
    """The service's ``traffic.timeout`` from BentoML's merged configuration (the ``@bentoml.service`` value,
    overridden by ``BENTOML_CONFIG_OPTIONS`` or a config file); None when it sets none."""
    services = bentoml_container().config.get().get("services") or {}  # no such section until a service sets one
    traffic = (services.get(service) or {}).get("traffic") or {}
    timeout = traffic.get("timeout")
    return float(timeout) if timeout else None


def bentoml_metrics_middleware() -> type:
    """BentoML's HTTP metrics middleware, as its app factory will import it."""
    try:
        return getattr(importlib.import_module(BENTOML_INSTRUMENTS), BENTOML_METRICS_MIDDLEWARE)
    except (ImportError, AttributeError) as error:
        raise _missing(f"{BENTOML_INSTRUMENTS}.{BENTOML_METRICS_MIDDLEWARE}", error) from error


def replace_bentoml_metrics_middleware(middleware: type) -> None:
    """Make BentoML's app factory use ``middleware`` (a subclass of :func:`bentoml_metrics_middleware`)."""
    setattr(importlib.import_module(BENTOML_INSTRUMENTS), BENTOML_METRICS_MIDDLEWARE, middleware)


def _bentoml_store_classes() -> tuple[type, type, type]:
    try:
        from bentoml._internal.bento import BentoStore
        from bentoml._internal.models import ModelStore
        from bentoml._internal.server.metrics.prometheus import PrometheusClient
    except ImportError as error:
        raise _missing("bentoml._internal's BentoStore, ModelStore or PrometheusClient", error) from error
    return BentoStore, ModelStore, PrometheusClient


@contextmanager
def bentoml_home_in_process(home: Path) -> Iterator[Path]:
    """Inside the block, this process's BentoML singletons (home, model and bento stores, metrics client) use
    ``home``; restored after it. For the tests: a BentoML home per test module, no server started."""
    container = bentoml_container()
    BentoStore, ModelStore, PrometheusClient = _bentoml_store_classes()  # noqa: N806 (classes)
    with (
        container.bentoml_home.patch(str(home)),
        container.model_store.patch(ModelStore(home / "models")),
        container.bento_store.patch(BentoStore(home / "bentos")),
        container.metrics_client.patch(PrometheusClient(multiproc=False)),
    ):
        yield home


# --------------------------------------------------------------------------- uvicorn


def h11_protocol() -> type:
    """uvicorn's h11 HTTP protocol class (the base of papertrack's request-deadline protocol)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    return H11Protocol


def uvicorn_auto_protocol() -> str:
    """The ``module:Class`` uvicorn loads for ``http="auto"`` (what BentoML's workers use)."""
    import uvicorn.config

    return uvicorn.config.HTTP_PROTOCOLS["auto"]


def set_uvicorn_auto_protocol(target: str) -> None:
    """Make uvicorn load ``target`` (``module:Class``) for ``http="auto"`` in this process."""
    import uvicorn.config

    uvicorn.config.HTTP_PROTOCOLS["auto"] = target


# --------------------------------------------------------------------------- prometheus_client (tests)


def unregister_prometheus_collectors(prefix: str) -> None:
    """Remove from prometheus_client's process-wide registry every collector with a metric named ``prefix...``
    (the registry lists its collectors through no public method)."""
    from prometheus_client import REGISTRY

    for collector, names in list(REGISTRY._collector_to_names.items()):
        if any(name.startswith(prefix) for name in names):
            REGISTRY.unregister(collector)


# --------------------------------------------------------------------------- the check


def problems() -> list[str]:
    """What differs from the checked versions: another installed version, or a hook that is gone. Empty when
    every hook above is where it was."""
    found = []
    for name, prefix in CHECKED_VERSIONS.items():
        installed = importlib.metadata.version(name)
        if not installed.startswith(prefix):
            found.append(f"{name} {installed} is installed; the private hooks were checked against {prefix}x")
    try:
        container = bentoml_container()
        found += [f"BentoMLContainer.{e} is gone" for e in BENTOML_CONTAINER_ENTRIES if not hasattr(container, e)]
        bentoml_metrics_middleware()
        _bentoml_store_classes()
    except PrivateHookMissing as error:
        found.append(str(error))
    if importlib.util.find_spec(BENTOML_HTTP_APP_LOGGER) is None:  # its logger is named after the module
        found.append(f"BentoML's module {BENTOML_HTTP_APP_LOGGER} (the logger of its HTTP app) is gone")
    import uvicorn.config

    protocols = getattr(uvicorn.config, "HTTP_PROTOCOLS", None)
    if not isinstance(protocols, dict) or "auto" not in protocols:
        found.append('uvicorn.config.HTTP_PROTOCOLS["auto"] is gone')
    try:
        base = h11_protocol()
        found += [f"uvicorn's H11Protocol.{m} is gone" for m in UVICORN_H11_MEMBERS if not hasattr(base, m)]
        import inspect

        if "self.app = config.loaded_app" not in inspect.getsource(base.__init__):  # what the protocol wraps
            found.append("uvicorn's H11Protocol no longer keeps the app it calls in self.app")
    except ImportError as error:
        found.append(str(_missing("uvicorn.protocols.http.h11_impl.H11Protocol", error)))
    from prometheus_client import REGISTRY

    if not isinstance(getattr(REGISTRY, "_collector_to_names", None), dict):
        found.append("prometheus_client's REGISTRY._collector_to_names is gone")
    return found
