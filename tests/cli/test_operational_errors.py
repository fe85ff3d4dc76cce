"""A failure of the machine, not of papertrack — a full disk, a store another process has locked, a working folder
deleted under the command — is one ``error:`` line with what to do, exit 2, no traceback (``-v`` shows it)."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from papertrack import store
from papertrack.cli import app


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


@pytest.fixture
def failing_store(monkeypatch):
    """`papertrack runs` whose store raises the exception the test sets."""
    raised: dict[str, BaseException] = {}

    def fail(*args, **kwargs):
        raise raised["exc"]

    monkeypatch.setattr(store, "open", fail)
    return raised


def test_a_full_disk_is_one_line_naming_the_file(failing_store):
    failing_store["exc"] = OSError(errno.ENOSPC, "No space left on device", "/p/.papertrack/mlflow.db")
    result = CliRunner().invoke(app, ["runs"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert _lines(result.output) == [
        "error: no space left on the device writing /p/.papertrack/mlflow.db: free some space (df -h) and run the "
        "command again; nothing that was complete before is lost"
    ]


def test_a_locked_store_is_one_line_even_behind_sqlalchemys_wrapping(failing_store):
    from sqlalchemy.exc import OperationalError

    try:
        try:
            raise sqlite3.OperationalError("database is locked")
        except sqlite3.OperationalError as inner:
            raise OperationalError("SELECT 1", {}, inner) from inner
    except OperationalError as wrapped:
        failing_store["exc"] = RuntimeError("MLflow could not read the store")
        failing_store["exc"].__cause__ = wrapped
    result = CliRunner().invoke(app, ["runs"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    (line,) = _lines(result.output)
    assert line.startswith("error: the store's database is locked by another process")
    assert "wait for it to finish" in line


def test_verbose_shows_the_traceback_too(failing_store):
    failing_store["exc"] = OSError(errno.ENOSPC, "No space left on device", "/p/x")
    result = CliRunner().invoke(app, ["-v", "runs"])
    assert result.exit_code == 2
    assert "Traceback" in result.output and "error: no space left on the device writing /p/x" in result.output


def test_a_bug_keeps_its_traceback(failing_store):
    failing_store["exc"] = ZeroDivisionError("a bug")
    result = CliRunner().invoke(app, ["runs"])
    assert isinstance(result.exception, ZeroDivisionError)


def test_a_deleted_working_folder_is_one_line(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    code = (
        "import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
        "sys.argv = ['papertrack', 'runs']; from papertrack.cli import main; main()"
    )
    env = {k: v for k, v in os.environ.items() if k != "PAPERTRACK_HOME"}
    out = subprocess.run([sys.executable, "-c", code, str(gone)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    (line,) = _lines(out.stderr)
    assert line.startswith("error: the working folder no longer exists")
