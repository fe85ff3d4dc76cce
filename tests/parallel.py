"""The suite on two processes (pytest-xdist, `-n 2 --dist loadgroup` in pyproject.toml): what the test processes
share and how the work is split between them.

- The session's trained store (conftest's ``trained``) is trained once per run, not once per process: the first
  process to ask for it sweeps into a template folder beside the processes' own temporary folders (under a file lock),
  every process then gets its own copy of it (:func:`copy_store`), so what one test writes into its store is never
  seen by a test of the other process.
- Each test module runs in one process (its ``xdist_group``): a module's fixtures are made once. The modules that
  start Spark share one group (one JVM at a time), so do the modules that read from the session's `papertrack serve`
  (one server per run); the modules with the most slow tests are handed out first, so the last module to run is a
  short one.
- A sweep in a test process fits one model at a time (:func:`one_job_per_test_process`): the two processes already
  keep both cores busy.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

# modules that start a JVM each (pyspark's local[2]): one at a time
SPARK_MODULES = ("tests/serving/test_spark_label.py", "tests/serving/test_spark_hostile.py")


def worker() -> str | None:
    """This process's pytest-xdist name (gw0, gw1, ...), or None in a run without workers."""
    return os.environ.get("PYTEST_XDIST_WORKER")


@contextmanager
def locked(path: Path):
    """An exclusive lock on ``path`` (created), held across processes for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _Pickler(pickle.Pickler):
    """Candidates (their builders are closures) are written as their catalogue name and read back from it."""

    def persistent_id(self, obj):
        from papertrack.models.candidates import Candidate
        from papertrack.models.catalogue import CANDIDATES

        if isinstance(obj, Candidate) and CANDIDATES.get(obj.name) is obj:
            return obj.name
        return None


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        from papertrack.models.catalogue import CANDIDATES

        return CANDIDATES[pid]


def made_once(folder: Path, make: Callable[[Path], Any]) -> Any:
    """``make(folder)``'s answer, made by the first process that asks and read back (pickled) by the others."""
    answer = folder / "answer.pickle"
    with locked(folder.with_name(folder.name + ".lock")):
        if not answer.exists():
            if folder.exists():
                shutil.rmtree(folder)  # a process that failed part way: start again
            folder.mkdir(parents=True)
            made = make(folder)
            with open(answer.with_suffix(".part"), "wb") as out:
                _Pickler(out).dump(made)
            answer.with_suffix(".part").rename(answer)
    with open(answer, "rb") as stored:
        return _Unpickler(stored).load()


def _text_columns(connection: sqlite3.Connection) -> list[tuple[str, str]]:
    tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return [
        (table, column[1])
        for table in tables
        for column in connection.execute(f'PRAGMA table_info("{table}")')
        if any(kind in (column[2] or "").upper() for kind in ("CHAR", "TEXT", "CLOB"))
    ]


def copy_store(source: Path, target: Path) -> int:
    """A copy of the sqlite store in ``source`` (mlflow.db and its artifacts folder) at ``target``: the database is
    copied through sqlite's backup API and every text value naming ``source`` (the experiment's artifact location,
    each run's and model's artifact URI) then names ``target`` instead, so the copy's runs read and write their own
    artifacts. Returns how many values were moved."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("mlflow.db", "mlflow.db-*"))
    old, new = str(source), str(target)
    with sqlite3.connect(source / "mlflow.db") as original, sqlite3.connect(target / "mlflow.db") as copy:
        original.backup(copy)
        moved = 0
        for table, column in _text_columns(copy):
            moved += copy.execute(
                f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) '
                f'WHERE instr("{column}", ?) > 0 OR "{column}" = ?',
                (old, new, old + "/", old),
            ).rowcount
    return moved


def group_modules(items: list[pytest.Item]) -> None:
    """Every test in its module's ``xdist_group`` (the Spark modules in one, the modules that use the session's
    `papertrack serve` in one: one server per run), and the modules reordered: most slow tests first (xdist hands
    out groups in this order), the random order kept otherwise (a stable sort)."""

    def module(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    slow = Counter(module(item) for item in items if item.get_closest_marker("slow"))
    serving = {module(item) for item in items if "server_env" in getattr(item, "fixturenames", ())}
    for item in items:
        name = module(item)
        group = "spark" if name in SPARK_MODULES else "server" if name in serving else name
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: -slow[module(item)])


@pytest.fixture(scope="session", autouse=True)
def one_job_per_test_process():
    """With pytest-xdist each test process has a core: a sweep in a test process fits one model at a time instead of
    starting joblib's worker processes (seconds of imports each, for fits of milliseconds on the tests' small data).
    The results do not depend on it (test_temporal.py compares 1 and 2 jobs); `papertrack` subprocesses and a run
    with `-n 0` keep the default (one job per core)."""
    if worker() is None:
        yield
        return
    from papertrack.training import fits

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fits, "default_jobs", lambda: 1)
        yield
