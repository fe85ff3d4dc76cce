"""``papertrack gc`` removes the model files of registered versions that serve nothing (no alias) and their BentoML
copies, through MLflow's own deletion and ``mlflow gc``; it keeps every aliased version, a version still being
registered, the runs, and another store's BentoML copies; ``--dry-run`` removes nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from papertrack import registry, settings, store
from tests.conftest import bentoml_home

pytestmark = pytest.mark.slow  # MLflow's own gc, a process

NAME = settings.MODEL_NAME
MODEL_BYTES = 300_000


def _ended_process_owner() -> str:
    import psutil

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = psutil.Process(child.pid).create_time()
    child.wait()
    return f"{child.pid}@{socket.gethostname()} started {started:.2f}"


def _version(opened, tmp: Path, number: int, tags: dict[str, str]) -> tuple[str, str, Path]:
    """A run with a logged model of MODEL_BYTES bytes, registered as the next version; (run id, model id, files)."""
    client = opened.client()
    run = client.create_run(opened.experiment().experiment_id)
    model = client.create_logged_model(opened.experiment().experiment_id, name="model", source_run_id=run.info.run_id)
    folder = tmp / f"model{number}"
    folder.mkdir()
    (folder / "predictor.pkl").write_bytes(os.urandom(MODEL_BYTES))
    client.log_model_artifacts(model.model_id, str(folder))
    client.finalize_logged_model(model.model_id, "READY")
    client.set_terminated(run.info.run_id)
    with store.using(opened):  # the registry finds the logged model through MLflow's process-wide tracking URI
        version = client.create_model_version(
            NAME,
            f"models:/{model.model_id}",
            run.info.run_id,
            {"run_id": run.info.run_id, **tags},
            model_id=model.model_id,
        )
    assert str(version.version) == str(number)
    location = client.get_logged_model(model.model_id).artifact_location
    return run.info.run_id, model.model_id, Path(location.removeprefix("file://"))


@pytest.fixture
def store_with_versions(tmp_path, monkeypatch):
    """Six versions: 1 decided and superseded, 2 challenger, 3 champion, 4 being registered by this process,
    5 abandoned (its owner ended before its alias), 6 version 3's model registered again without an alias; a
    BentoML copy of 1 and of another store's version 1."""
    home = tmp_path / ".papertrack"
    monkeypatch.setenv(settings.HOME_ENV, str(home))
    monkeypatch.delenv(settings.TRACKING_URI_ENV, raising=False)
    opened = store.open()
    opened.client().create_registered_model(NAME)
    decided = {"gate": "decided", "candidate": "tfidf-word-logreg"}
    versions = {
        1: _version(opened, tmp_path, 1, decided),
        2: _version(opened, tmp_path, 2, decided),
        3: _version(opened, tmp_path, 3, decided),
        4: _version(opened, tmp_path, 4, {registry.OWNER_TAG: registry.owner()}),
        5: _version(opened, tmp_path, 5, {registry.OWNER_TAG: _ended_process_owner()}),
    }
    client = opened.client()
    with store.using(opened):  # 6: version 3's logged model registered a second time, no alias
        client.create_model_version(NAME, f"models:/{versions[3][1]}", versions[3][0], {"gate": "decided"})
    client.set_registered_model_alias(NAME, settings.CHALLENGER, "2")
    client.set_registered_model_alias(NAME, settings.CHAMPION, "3")
    bento = tmp_path / "bentoml"
    import bentoml

    with bentoml_home(bento):
        for tag in (f"papertrack:v1-{versions[1][0][:12]}", "papertrack:v1-0123456789ab"):
            with bentoml.models.create(tag) as model:
                Path(model.path_of("weights.bin")).write_bytes(b"x" * 10)
    return opened, versions, bento


def _gc(bento: Path, *args: str):
    """``papertrack gc ARGS`` in this process (its BentoML store: ``bento``); MLflow's own gc runs as a process."""
    from typer.testing import CliRunner

    from papertrack.cli import app

    with bentoml_home(bento):
        return CliRunner().invoke(app, ["gc", *args])


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_gc_removes_only_versions_without_an_alias_and_their_bentoml_copies(store_with_versions):
    opened, versions, bento = store_with_versions
    listed = _gc(bento, "--dry-run")
    assert listed.exit_code == 0, listed.output
    out = " ".join(listed.output.split())
    assert "Would remove 2 registered version(s)" in out
    assert f"version 1 tfidf-word-logreg, run {versions[1][0][:12]} 0.3 MB" in out
    assert f"version 5 candidate ?, run {versions[5][0][:12]} 0.3 MB" in out
    assert "version 2 (challenger), version 3 (champion), version 4 (being registered by " in out
    assert "version 6 (its files are also version 3's)" in out
    assert all(_files(files) for _, _, files in versions.values())  # the dry run removed nothing

    done = _gc(bento)
    assert done.exit_code == 0, done.output
    out = " ".join(done.output.split())
    assert "Removed 2 version(s) and 1 BentoML copy." in out and "The store holds " in out
    client = opened.client()
    assert sorted(int(v.version) for v in client.search_model_versions(f"name='{NAME}'")) == [2, 3, 4, 6]
    assert not _files(versions[1][2]) and not _files(versions[5][2])
    assert all(len(_files(versions[n][2])) == 1 for n in (2, 3, 4))
    assert client.get_run(versions[1][0]).info.lifecycle_stage == "active"  # runs stay
    copies = sorted(p.name for p in (bento / "models" / "papertrack").iterdir() if p.name != "latest")
    assert copies == ["v1-0123456789ab"]  # another store's copy (another run) stays

    again = _gc(bento)
    assert again.exit_code == 0 and "Nothing to remove" in again.output
