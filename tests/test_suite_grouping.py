"""The suite's own plumbing: each test module runs whole in one test process (tests/parallel.py), so a module's
fixtures (a sweep, a server) are made once. pytest-xdist's ``--dist loadgroup`` silently stopped grouping on pytest
9.2 (pytest-dev/pytest-xdist#1386): nothing failed, the suite only got slower, which is why this is checked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a pytest run of its own, on two processes
def test_each_module_runs_whole_in_one_test_process(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from tests.parallel import group_modules

            @pytest.hookimpl(tryfirst=True)
            def pytest_collection_modifyitems(items):
                group_modules(items)
            """
        )
    )
    for module in ("a", "b"):
        (tmp_path / f"test_{module}.py").write_text(
            textwrap.dedent(
                f"""
                import os, pytest

                @pytest.mark.parametrize("i", range(6))
                def test_where(i):
                    with open({str(tmp_path / "where.txt")!r}, "a") as out:
                        out.write("{module} " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
                """
            )
        )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist", "-n", "2"]
        + ["--dist", "loadgroup", "-p", "no:randomly", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers: dict[str, set[str]] = {}
    for line in (tmp_path / "where.txt").read_text().splitlines():
        module, worker = line.split()
        workers.setdefault(module, set()).add(worker)
    assert {module: len(w) for module, w in workers.items()} == {"a": 1, "b": 1}, workers
