"""Which store a command uses: the nearest ``.papertrack`` from the working directory up, as git finds ``.git`` — but
never one another user owns or others can write, never past a folder others can write (``/tmp``), never a per-user
"last store" of another checkout; and ``--model champion`` means the registry, never a ``./champion`` folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from papertrack import model_lookup, settings, store
from papertrack.cli import app
from papertrack.errors import NoModelError

ABSTRACT = "We propose a sparse attention mechanism for transformers that attends to a learned subset of tokens."
NOBODY = 65534


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def no_home(monkeypatch, tmp_path):
    """No PAPERTRACK_HOME / MLFLOW_TRACKING_URI / PAPERTRACK_SAFE_STORES (restored afterwards even when papertrack
    sets them) and a private per-user state folder."""
    monkeypatch.setenv(settings.HOME_ENV, "placeholder")
    monkeypatch.delenv(settings.HOME_ENV)
    monkeypatch.delenv(settings.TRACKING_URI_ENV, raising=False)
    monkeypatch.delenv(settings.SAFE_STORES_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


def _store(folder: Path) -> Path:
    """A folder that looks like a store (``.papertrack/mlflow.db``)."""
    (folder / ".papertrack").mkdir(parents=True)
    (folder / ".papertrack" / "mlflow.db").write_bytes(b"")
    return folder / ".papertrack"


def _others_own(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    for p in (path, *path.rglob("*")):
        os.chown(p, NOBODY, NOBODY)


def test_the_store_is_the_nearest_one_above_the_working_directory(no_home, monkeypatch):
    project = no_home / "project"
    _store(project)
    (project / "notes" / "deep").mkdir(parents=True)
    (project / "notes" / ".papertrack").mkdir()  # an empty one (an older papertrack made these): not a store
    monkeypatch.chdir(project / "notes" / "deep")
    current = settings.current()
    assert current.home == project / ".papertrack" and current.home_source == "found"
    monkeypatch.chdir(no_home)
    assert settings.current().home == no_home / ".papertrack" and settings.current().home_source == "new"


def test_a_store_above_the_working_folder_is_named(no_home, monkeypatch, caplog):
    project = no_home / "project"
    store.open(home=_store(project))  # a real (empty) sqlite store
    (project / "notes").mkdir()
    monkeypatch.chdir(project / "notes")
    with caplog.at_level("WARNING", logger="papertrack.store"):
        store.open(create=False)
    assert f"using the papertrack store {project / '.papertrack'}" in caplog.text
    caplog.clear()
    monkeypatch.chdir(project)
    with caplog.at_level("WARNING", logger="papertrack.store"):
        store.open(create=False)
    assert "using the papertrack store" not in caplog.text  # the working folder's own store: nothing to say


def test_a_store_another_user_owns_is_refused_with_its_owner_and_the_ways_out(no_home, monkeypatch):
    foreign = _store(no_home / "shared")
    _others_own(foreign)
    (no_home / "shared" / "mine").mkdir()
    monkeypatch.chdir(no_home / "shared" / "mine")
    with pytest.raises(settings.UnsafeStore) as refused:
        settings.current()
    message = str(refused.value)
    assert str(foreign) in message and "owned by nobody (uid 65534)" in message
    assert f"export {settings.HOME_ENV}=" in message and f"export {settings.SAFE_STORES_ENV}={foreign}" in message
    # the CLI: one error line, exit 2, nothing written into the foreign store
    before = sorted(p.name for p in foreign.iterdir())
    result = _run("runs")
    assert result.exit_code == 2 and "refusing the papertrack store" in result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in foreign.iterdir()) == before


def test_a_store_others_can_write_is_refused(no_home, monkeypatch):
    shared = _store(no_home / "team")
    shared.chmod(0o777)
    (no_home / "team" / "sub").mkdir()
    monkeypatch.chdir(no_home / "team" / "sub")
    with pytest.raises(settings.UnsafeStore, match="can be written by others"):
        settings.current()
    shared.chmod(0o755)
    (shared / "mlflow.db").chmod(0o664)
    with pytest.raises(settings.UnsafeStore, match="mlflow.db can be written by its group"):
        settings.current()


def test_an_allowed_or_named_foreign_store_is_used(no_home, monkeypatch):
    foreign = _store(no_home / "shared")
    _others_own(foreign)
    (no_home / "shared" / "mine").mkdir()
    monkeypatch.chdir(no_home / "shared" / "mine")
    monkeypatch.setenv(settings.SAFE_STORES_ENV, f"/elsewhere{os.pathsep}{foreign}")
    assert settings.current().home == foreign
    monkeypatch.setenv(settings.SAFE_STORES_ENV, "*")
    assert settings.current().home == foreign
    monkeypatch.delenv(settings.SAFE_STORES_ENV)
    monkeypatch.setenv(settings.HOME_ENV, str(foreign))  # named by the user: their choice
    assert settings.current().home == foreign and settings.current().home_source == "env"


def test_the_walk_stops_below_a_folder_others_can_write(no_home, monkeypatch):
    """A .papertrack planted in /tmp (world-writable, sticky) is never reached from a folder under it."""
    scratch = no_home / "scratch"
    _store(scratch)  # even one the user owns: anybody could have put it there
    scratch.chmod(0o1777)
    (scratch / "me" / "work").mkdir(parents=True)
    monkeypatch.chdir(scratch / "me" / "work")
    current = settings.current()
    assert current.home == scratch / "me" / "work" / ".papertrack" and current.home_source == "new"
    monkeypatch.chdir(scratch)  # in the shared folder itself, its own store is still checked and used
    assert settings.current().home == scratch / ".papertrack"


def test_a_read_command_creates_no_store_and_says_where_it_looked(no_home, monkeypatch, tmp_path):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    dump = folder / "dump.jsonl"
    dump.write_text(json.dumps({"abstract": ABSTRACT}) + "\n", encoding="utf-8")
    for args in (("label", str(dump), "-o", "out.jsonl"), ("suggest", str(dump)), ("runs",), ("serve",)):
        result = _run(*args)
        assert result.exit_code == 1, (args, result.output)
        message = " ".join(result.output.split())
        assert f"no .papertrack/mlflow.db in {folder} or a folder above it" in message, message
        assert "Run `papertrack train` in your project's folder" in message
    assert sorted(p.name for p in folder.iterdir()) == ["dump.jsonl"]  # no .papertrack, no output
    with pytest.raises(NoModelError, match="no papertrack store found"):
        import papertrack

        papertrack.load()
    assert not (folder / ".papertrack").exists()


def test_outside_any_project_a_read_never_uses_another_checkouts_store(no_home, monkeypatch):
    project, outside = no_home / "project", no_home / "outside"
    project.mkdir()
    outside.mkdir()
    monkeypatch.chdir(project)
    store.open()  # what train does first: creates ./.papertrack
    monkeypatch.chdir(outside)
    with pytest.raises(store.NoStore, match=f"no .papertrack/mlflow.db in {outside}"):
        store.open(create=False)
    assert not (no_home / "state").exists()  # nothing recorded per user
    assert not (outside / ".papertrack").exists()


def test_a_name_means_the_registry_even_when_a_folder_has_that_name(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    for name in ("champion", "challenger", "3"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "python_model.pkl").write_bytes(b"planted")
    with caplog.at_level("WARNING", logger="papertrack.model_lookup"):
        assert model_lookup.parse("champion").uri == "models:/papertrack@champion"
        assert model_lookup.parse("challenger").uri == "models:/papertrack@challenger"
        assert model_lookup.parse("3").uri == "models:/papertrack/3"
    assert "not the folder ./champion" in caplog.text and "pass ./champion" in caplog.text
    assert model_lookup.parse("./champion").uri == "./champion"  # a path is a folder
    assert model_lookup.parse(str(tmp_path / "3")).uri == str(tmp_path / "3")
    assert model_lookup.parse("file:///m").uri == "file:///m"
    assert model_lookup.parse("~/m").uri == str(Path.home() / "m")
    caplog.clear()
    with caplog.at_level("WARNING", logger="papertrack.model_lookup"):
        assert model_lookup.parse("other").uri == "models:/papertrack@other"
    assert caplog.text == ""  # no folder of that name: nothing to warn about


@pytest.mark.slow
def test_a_trained_model_is_found_from_a_subfolder_and_never_from_outside_the_project(trained, tmp_path):
    """The session's trained store as a project's ``.papertrack``: ``label`` from a folder inside the project labels
    (naming the store it found above); from a folder outside it, it stops with the error, and creates nothing."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "notes").mkdir(parents=True)
    outside.mkdir()
    (project / ".papertrack").symlink_to(trained["home"], target_is_directory=True)
    dump = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "samples" / "unlabeled_dump.txt"
    if not dump.exists():
        pytest.skip(f"{dump} not found")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (settings.HOME_ENV, settings.TRACKING_URI_ENV, settings.SAFE_STORES_ENV)
    }
    env["XDG_STATE_HOME"] = str(tmp_path / "state")

    def label(cwd: Path):
        return subprocess.run(
            [sys.executable, "-m", "papertrack.cli", "label", str(dump), "-o", "out.jsonl", "--no-progress"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    inside = label(project / "notes")
    assert inside.returncode == 0, inside.stderr
    assert "Traceback" not in inside.stderr and "not found" not in inside.stderr
    assert f"using the papertrack store {project / '.papertrack'}" in inside.stderr
    assert (project / "notes" / "out.jsonl").read_text(encoding="utf-8").count("\n") == 30
    lost = label(outside)
    assert lost.returncode == 1 and f"no .papertrack/mlflow.db in {outside} or a folder above it" in " ".join(
        lost.stderr.split()
    )
    assert "Traceback" not in lost.stderr
    assert sorted(p.name for p in outside.iterdir() if p.name.startswith(".")) == []  # no .papertrack created
