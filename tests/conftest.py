"""Shared fixtures: the shared data folder, a stratified subset of it, a trained champion in a temporary MLflow
store (trained once per test session), the service on that champion (in process and over HTTP) and a labeler
without a model.

`pytest -m "not slow"` is the fast suite: every test in it takes under ~2 s (`--durations=0`). A slower test is
marked by hand (`@pytest.mark.slow`, `pytestmark`) when it is slow itself, and marked here (:data:`SLOW_FIXTURES`)
when it asks for a costly fixture, so a new test on the trained sweep cannot slip into the fast suite. The tests
run in a new random order every time (pytest-randomly prints the seed; `--randomly-seed=N` repeats an order): each
sets up what it needs through its fixtures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import pytest

from . import parallel
from .processes import free_port, stop, wait_http

# PYTHONDONTWRITEBYTECODE is set on the team's machines: pytest then rewrites the asserts of every test module at
# every run (seconds of the fast suite) and every `papertrack` subprocess compiles papertrack's modules again. The
# test session caches both, the way Python does by default (__pycache__ folders are git-ignored; the wheel `build`
# makes leaves them out).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
os.environ.pop("MLFLOW_TRACKING_URI", None)  # tests always use their own temporary stores
# no evaluation plots in the tests' sweeps (about 4 s per plotted candidate): the tests that look at plots ask for them
# (`trained` below, SweepConfig(plots=...), `train --plots`)
os.environ["PAPERTRACK_PLOTS"] = "none"

FAST_CANDIDATES = ["tfidf-word-cnb", "tfidf-word-svm"]

# fixtures that cost more than the fast suite's ~2 s per test (measured with --durations): the sweep trained once per
# session (~1 minute) and what depends on it (the BentoML import, the service in process and over HTTP);
# `registered` (tests/models/conftest.py) logs a model into a fresh store; `minilm` (test_embeddings.py) loads the
# packaged MiniLM; `registered_store` (test_missing_model_and_csv_columns.py) trains and registers two versions
# (4.5 s). A test that is slow by itself is marked where it is written (@pytest.mark.slow, pytestmark).
SLOW_FIXTURES = frozenset(
    {"trained", "bento_home", "imported", "client", "server_env", "server", "registered", "minilm", "registered_store"}
)


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    parallel.group_modules(items)


@pytest.fixture(scope="session", autouse=True)
def store_schema_template(tmp_path_factory):
    """MLflow's sqlite schema made once per run and copied into every new store the test processes create.

    A new sqlite store runs MLflow's ~60 schema migrations (Alembic): ~2 s quiet, ~6–11 s on a loaded machine, paid
    by every test that opens a store of its own. Here the first new store is migrated the real way into a template
    file, and each later one gets that file's tables copied in (sqlite's backup API, on the store's own connection);
    MLflow then finds every table and checks the schema's revision as usual. Only in the test processes (a `papertrack`
    subprocess creates its store itself) and only for sqlite files. MLflow creates the tables through a private
    function (``mlflow.store.db.utils._initialize_tables``): a test-only reach into MLflow, never the product's."""
    import sqlite3

    import mlflow.store.db.utils as db_utils
    import mlflow.store.model_registry.sqlalchemy_store as registry_store

    migrate = db_utils._initialize_tables
    # one template for the run: with pytest-xdist the test processes share it (the first one migrates, under a lock)
    shared = tmp_path_factory.getbasetemp().parent if parallel.worker() else tmp_path_factory.getbasetemp()
    template = shared / "mlflow-schema" / "mlflow.db"

    def initialize_tables(engine):
        database = engine.url.database
        if engine.url.get_backend_name() != "sqlite" or not database or database == ":memory:":
            return migrate(engine)
        with parallel.locked(template.with_suffix(".lock")):
            if not template.exists():
                import sqlalchemy

                building = template.with_suffix(".building")
                building.unlink(missing_ok=True)  # a process that failed part way
                blank = sqlalchemy.create_engine(f"sqlite:///{building}")
                try:
                    migrate(blank)
                finally:
                    blank.dispose()
                building.rename(template)
        with sqlite3.connect(template) as source, engine.connect() as connection:
            source.backup(connection.connection.driver_connection)

    patch = pytest.MonkeyPatch()
    patch.setattr(db_utils, "_initialize_tables", initialize_tables)
    patch.setattr(registry_store, "_initialize_tables", initialize_tables)
    yield template
    patch.undo()


one_job_per_test_process = parallel.one_job_per_test_process  # an autouse session fixture


def shared_data_dir() -> Path:
    configured = os.environ.get("PAPERTRACK_DATA_DIR")
    return Path(configured) if configured else Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = shared_data_dir()
    if not (path / "iclr2024_topics.jsonl").exists():
        pytest.skip(f"shared data not found at {path} (set PAPERTRACK_DATA_DIR)")
    return path


def stratified_subset(source: Path, target: Path, per_label: int) -> Path:
    """At most ``per_label`` records of every label, in file order."""
    taken: dict[str, int] = defaultdict(int)
    with open(source, encoding="utf-8") as src, open(target, "w", encoding="utf-8") as out:
        for line in src:
            record = json.loads(line)
            if taken[record["label"]] < per_label:
                taken[record["label"]] += 1
                out.write(line)
    return target


TWO_YEARS = ("iclr2024_topics.jsonl", "icml2024_topics.jsonl")
THREE_SOURCES = (*TWO_YEARS, "iclr2025_dev_topics.jsonl")  # the default data: two venues of 2024, ICLR 2025


def sources_subset(data_dir: Path, target: Path, per_label: int, names=TWO_YEARS) -> Path:
    """At most ``per_label`` records of every label from each file ``names`` (in that order), in one file: its
    records keep their venue and year, so it has one source per file, like the default data."""
    with open(target, "w", encoding="utf-8") as out:
        for name in names:
            part = stratified_subset(data_dir / name, target.with_suffix(f".{name}"), per_label)
            out.write(part.read_text(encoding="utf-8"))
    return target


@pytest.fixture(scope="session")
def subset_path(data_dir, tmp_path_factory) -> Path:
    """A small two-source training file (ICLR 2024 and ICML 2024, 6 records per label and source)."""
    if not (data_dir / "icml2024_topics.jsonl").exists():
        pytest.skip(f"icml2024_topics.jsonl not found in {data_dir} (set PAPERTRACK_DATA_DIR)")
    return sources_subset(data_dir, tmp_path_factory.mktemp("data") / "subset.jsonl", 6)


@pytest.fixture(scope="session")
def labeled_subset(data_dir, tmp_path_factory) -> Path:
    """A small three-source training file (ICLR 2024, ICML 2024, ICLR 2025; 6 records per label and source)."""
    if not (data_dir / "iclr2025_dev_topics.jsonl").exists():
        pytest.skip(f"iclr2025_dev_topics.jsonl not found in {data_dir} (set PAPERTRACK_DATA_DIR)")
    return sources_subset(data_dir, tmp_path_factory.mktemp("data3") / "subset3.jsonl", 6, THREE_SOURCES)


def _sweep(data: Path, home: Path):
    from papertrack import store as stores
    from papertrack.training.sweep import SweepConfig, run_sweep

    # the shift holdout too (off by default with a temporal one): the tests read every evaluation of a sweep; the
    # default plots (the winner's and the runner-up's: both candidates), which test_training.py reads
    config = SweepConfig([data], candidate_names=FAST_CANDIDATES, folds=3, seed=7, shift_holdout=True, plots="top2")
    os.environ["PAPERTRACK_HOME"] = str(home)
    return run_sweep(config, stores.open())


@pytest.fixture(scope="session")
def trained(labeled_subset, tmp_path_factory):
    """A sweep of the fast candidates on the three-source subset (two years, so chosen on the temporal
    holdout, like the default data), registered as papertrack@champion in a temporary PAPERTRACK_HOME. The
    environment keeps pointing at that store for the rest of the session (the CLI subprocesses' store); ``store``
    is its :class:`papertrack.store.Store`, for the tests that call the library. With pytest-xdist the sweep runs
    once per run and each process gets its own copy of its store (tests/parallel.py)."""
    from papertrack import store as stores

    home = tmp_path_factory.mktemp("papertrack-home")
    if parallel.worker() is None:
        data, result = labeled_subset, _sweep(labeled_subset, home)
    else:

        def make(folder: Path):
            shutil.copyfile(labeled_subset, folder / labeled_subset.name)
            return folder / labeled_subset.name, _sweep(folder / labeled_subset.name, folder / "home")

        template = tmp_path_factory.getbasetemp().parent / "trained-template"
        data, result = parallel.made_once(template, make)
        shutil.rmtree(home)
        parallel.copy_store(template / "home", home)
    os.environ["PAPERTRACK_HOME"] = str(home)
    store = stores.open()
    return {
        "home": home,
        "store": store,
        "result": dataclasses.replace(result, tracking_uri=store.tracking_uri),
        "model_uri": "models:/papertrack@champion",
        "data": data,
    }


@contextmanager
def bentoml_home(home: Path):
    """A temporary BentoML home: the env var (for subprocesses) and BentoML's container singletons (this
    process) point at ``home`` inside the block, and are restored after it. BentoML has no public way to move
    its home in a running process: the tests (never the product) patch its configuration container."""
    from bentoml._internal.bento import BentoStore
    from bentoml._internal.configuration.containers import BentoMLContainer
    from bentoml._internal.models import ModelStore
    from bentoml._internal.server.metrics.prometheus import PrometheusClient

    for sub in ("models", "bentos", "envs", "tmp"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    saved = {k: os.environ.get(k) for k in ("BENTOML_HOME", "PAPERTRACK_BENTO_MODEL")}
    os.environ["BENTOML_HOME"] = str(home)
    try:
        with (
            BentoMLContainer.bentoml_home.patch(str(home)),
            BentoMLContainer.model_store.patch(ModelStore(home / "models")),
            BentoMLContainer.bento_store.patch(BentoStore(home / "bentos")),
            BentoMLContainer.metrics_client.patch(PrometheusClient(multiproc=False)),
        ):
            yield home
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# --------------------------------------------------------------------------- the service, in process and over HTTP
# In process (bento_home, imported, client): module-scoped, every test module that asks for them gets its own BentoML
# home and imported model (the home is patched into this process's BentoML singletons while the module runs). Over
# HTTP (server_env, server): one `papertrack serve` for the whole session, shared by the modules that only read
# from it (a test that must change the service or its store starts its own: processes.papertrack_serve).


@pytest.fixture(scope="module")
def bento_home(trained, tmp_path_factory):
    """A temporary BentoML home (env var for subprocesses, container singletons patched in this process)."""
    with bentoml_home(tmp_path_factory.mktemp("bentoml-home")) as home:
        yield home


@pytest.fixture(scope="module")
def imported(bento_home, trained):
    """The session's champion imported into the temporary BentoML home; PAPERTRACK_BENTO_MODEL names it."""
    from papertrack import settings
    from papertrack.serving.http import bento_store as store

    model = store.import_champion(trained["store"])
    os.environ[settings.BENTO_MODEL_ENV] = str(model.tag)
    return model


@pytest.fixture(scope="module")
def client(imported):
    """Starlette's TestClient on the service's real ASGI app (BentoML's routes, middlewares and validation)."""
    from prometheus_client import REGISTRY
    from starlette.testclient import TestClient

    from papertrack.serving.http.service import PaperTrack

    # another test module may have built the app in this process: its request metrics are registered in the
    # process-wide Prometheus registry (single-process mode) and would be registered a second time (the registry
    # lists its collectors through no public method: a test-only reach into prometheus_client)
    for collector, names in list(REGISTRY._collector_to_names.items()):
        if any(name.startswith("bentoml_") for name in names):
            REGISTRY.unregister(collector)
    with TestClient(PaperTrack.to_asgi(), base_url="http://127.0.0.1:3000") as test_client:
        yield test_client


PAPERTRACK = str(Path(sys.executable).with_name("papertrack"))


@pytest.fixture(scope="session")
def server_env(trained, tmp_path_factory):
    """The environment of a `papertrack serve` subprocess: its own BentoML home, the session's store."""
    home = tmp_path_factory.mktemp("bentoml-home-http")
    env = {
        **os.environ,
        "BENTOML_HOME": str(home),
        "PAPERTRACK_HOME": str(trained["home"]),
        "BENTOML_DO_NOT_TRACK": "true",
        "MLFLOW_DISABLE_TELEMETRY": "true",
    }
    env.pop("MLFLOW_TRACKING_URI", None)  # the session's store is PAPERTRACK_HOME's
    env.pop("PAPERTRACK_BENTO_MODEL", None)
    return env


@pytest.fixture(scope="session")
def server(server_env, tmp_path_factory):
    """`papertrack serve` on a free loopback port, started once per session (the tests that use it only read from
    it), stopped by its PID (process group) at teardown."""
    port = free_port()
    log = tmp_path_factory.mktemp("server-log") / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [PAPERTRACK, "serve", "--port", str(port)],
            env=server_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/readyz", proc, log)
        yield {"url": url, "proc": proc, "log": log}
    finally:
        stop(proc)
    assert proc.poll() is not None


# --------------------------------------------------------------------------- the labeler without a model


@pytest.fixture()
def fake_model(monkeypatch):
    """The labeler's model replaced by :class:`tests.fake_backend.FakeBackend` (the CLI runs without a model)."""
    import papertrack.serving.batch.labeler as labeler
    from tests.fake_backend import FakeBackend

    monkeypatch.setattr(labeler, "LocalBackend", FakeBackend)


CHROMIUM = "/usr/bin/chromium"  # Debian's Chromium, driven by Playwright (no browser download)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (skips with what to install when Chromium or Playwright is missing)."""
    import shutil

    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.skip("Debian's Chromium is missing: apt-get install -y chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Python Playwright is missing: .venv/bin/pip install -e '.[dev]' (no browser download needed)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def predictor():
    """A tiny synthetic model (tests.synthetic_corpus), made once per module that asks for it (a module may define
    its own ``predictor``)."""
    from tests.synthetic_corpus import fitted_predictor

    return fitted_predictor(per_label=12)[0]


@pytest.fixture
def registered(predictor, tmp_path, monkeypatch):
    """``predictor`` registered as papertrack@champion in a temporary store (tests.models.model_artifacts.register)."""
    from tests.models.model_artifacts import register

    return register(predictor, tmp_path, monkeypatch)
