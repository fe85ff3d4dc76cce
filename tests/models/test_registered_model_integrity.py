"""A registered model whose files are damaged or of another format: `papertrack label` says so in one ``error:``
line naming the file (MLflow's own files of the model too); `papertrack serve` repairs a damaged copy in the
BentoML store from the registry, and refuses (one ``error:`` line, before any worker starts) when the registry's
own copy is bad; a model whose logging fails part way leaves no files.

A tiny synthetic model (tests/synthetic_corpus.py) is logged into a temporary store per test: seconds, and the
session's trained champion is never touched.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from papertrack.models.manifest import DamagedArtifact
from tests.conftest import bentoml_home
from tests.models.model_artifacts import ABSTRACT, core_requirements, flat, flip_a_byte, label, truncate

os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


def test_a_good_registered_model_loads_and_labels(registered, tmp_path):
    from papertrack import store
    from papertrack.models.loading import load_predictor

    with store.using(registered["store"]):
        loaded, _ = load_predictor("models:/papertrack@champion")
    assert loaded.predict([ABSTRACT])[0]["tracks"][0]["label"] == "Deep Learning · Attention Mechanisms"
    result = label(tmp_path)
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8"))["id"] == "p1"


@pytest.mark.parametrize("damage", [flip_a_byte, truncate], ids=["flipped-byte", "truncated"])
def test_label_with_a_damaged_registered_model_is_one_error_line_naming_the_file(registered, tmp_path, damage):
    damage(registered["predictor_file"])
    result = label(tmp_path)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert f"{registered['predictor_file']} of models:/papertrack@champion is damaged" in flat(result.output)
    assert "papertrack train" in result.output
    assert not (tmp_path / "out.jsonl").exists()


def test_label_with_a_model_of_another_format_is_refused_with_retrain(registered, tmp_path):
    path = registered["manifest_file"]
    old = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**old, "format": 1, "papertrack": "0.0.9"}), encoding="utf-8")
    result = label(tmp_path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert flat(result.output) == (
        "error: models:/papertrack@champion was written by papertrack 0.0.9 (format 1); this is format 3 — "
        "retrain with this version: papertrack train"
    )


def test_label_with_a_truncated_mlflow_file_of_the_model_is_one_error_line(registered, tmp_path):
    """MLflow's own files of the model (here its pickled pyfunc wrapper) are checked against the digests recorded
    when it was logged: a truncated one is one line naming it."""
    model_folder = registered["predictor_file"].parent.parent
    truncate(model_folder / "python_model.pkl")
    result = label(tmp_path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert flat(result.output).startswith(
        f"error: {model_folder}/python_model.pkl of models:/papertrack@champion is damaged"
    )
    assert "papertrack train" in result.output


def test_a_model_whose_logging_fails_part_way_leaves_no_files(predictor, tmp_path, monkeypatch):
    """The disk fills while the model's files are copied into the store: the failure goes on (one error line at
    the CLI), and no truncated predictor.pkl or half-logged model is left in the store."""
    import errno

    import mlflow
    from mlflow.tracking import MlflowClient

    from papertrack import store
    from papertrack.models.artifact import PaperTrackModel, signature
    from papertrack.training.model_logging import _no_partial_model

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    mine = store.open()
    original = MlflowClient.log_model_artifacts

    def disk_full(self, model_id, local_dir):
        original(self, model_id, local_dir)  # the files land, then one is cut short by the full disk
        (stored,) = (tmp_path / "home").rglob("predictor.pkl")
        truncate(stored)
        raise OSError(errno.ENOSPC, "No space left on device", str(stored))

    monkeypatch.setattr(MlflowClient, "log_model_artifacts", disk_full)
    staging = tmp_path / "staging"
    staging.mkdir()
    with store.using(mine), mlflow.start_run(experiment_id=mine.experiment().experiment_id) as run:
        with pytest.raises(OSError, match="No space left"), _no_partial_model(mine, run.info.run_id):
            mlflow.pyfunc.log_model(
                name="model",
                python_model=PaperTrackModel(),
                artifacts=predictor.save_artifacts(staging),
                signature=signature(),
                pip_requirements=core_requirements(),
            )
    assert list((tmp_path / "home").rglob("predictor.pkl")) == []
    experiment = mine.experiment().experiment_id
    assert mine.client().search_logged_models([experiment]) == []


# --------------------------------------------------------------------------- the BentoML store and serve


@pytest.fixture
def bento(registered, tmp_path):
    with bentoml_home(tmp_path / "bentoml") as home:
        yield home


def stored_predictor(model) -> Path:
    return Path(model.path_of("mlflow_model")) / "artifacts" / "predictor.pkl"


def serve(monkeypatch):
    """`papertrack serve` up to the point where it would hand the process to BentoML (recorded instead)."""
    from typer.testing import CliRunner

    from papertrack.cli import app
    from papertrack.serving.http import serve_command as commands

    handed_over = []
    monkeypatch.setattr(commands.os, "execve", lambda *args: handed_over.append(args))
    result = CliRunner().invoke(app, ["serve", "--port", "3998"])
    return result, handed_over


def test_serve_repairs_a_damaged_copy_in_the_bento_store_from_the_registry(bento, registered, monkeypatch):
    import bentoml

    from papertrack.serving.http import bento_store as store

    model = store.import_champion(registered["store"])
    good = stored_predictor(model).read_bytes()
    flip_a_byte(stored_predictor(model))
    result, handed_over = serve(monkeypatch)
    assert result.exit_code == 0, result.output
    assert len(handed_over) == 1  # the server was started, on the repaired copy
    assert stored_predictor(bentoml.models.get(model.tag)).read_bytes() == good
    warning = flat(result.output).split("warning: ")[1]
    assert warning.startswith(f"{stored_predictor(model).parent}/predictor.pkl of {model.tag} is damaged")
    assert "importing it again from models:/papertrack/1" in warning


def test_serve_refuses_a_damaged_registered_model_in_one_line(bento, registered, monkeypatch):
    truncate(registered["predictor_file"])
    result, handed_over = serve(monkeypatch)
    assert result.exit_code == 2 and not handed_over
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "predictor.pkl" in result.output and "models:/papertrack/1" in flat(result.output)
    assert "papertrack train" in result.output


def test_serve_refuses_a_model_of_another_format(bento, registered, monkeypatch):
    from papertrack.serving.http import bento_store as store

    model = store.import_champion(registered["store"])
    path = Path(model.path_of("mlflow_model")) / "artifacts" / "papertrack.json"
    path.write_text(json.dumps({"format": 1, "papertrack": "0.0.9", "sha256": {}}), encoding="utf-8")
    result, handed_over = serve(monkeypatch)
    assert result.exit_code == 2 and not handed_over
    assert flat(result.output) == (
        f"error: {model.tag} was written by papertrack 0.0.9 (format 1); this is format 3 — "
        "retrain with this version: papertrack train"
    )


def test_the_service_refuses_a_damaged_stored_copy_at_start(bento, registered, monkeypatch):
    from papertrack import settings
    from papertrack.serving.http import bento_store as store
    from papertrack.serving.http.service import PaperTrack

    model = store.import_champion(registered["store"])
    flip_a_byte(stored_predictor(model))
    monkeypatch.setenv(settings.BENTO_MODEL_ENV, str(model.tag))
    with pytest.raises(DamagedArtifact, match=r"predictor\.pkl of .* is damaged"):
        PaperTrack()
