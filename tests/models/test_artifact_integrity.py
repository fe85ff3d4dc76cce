"""The artifact's format version and integrity (issue 18, issue 19 item 10).

A model is logged with a manifest — format version, papertrack version, sha256 of the pickled predictor — and
nothing of it is unpickled before the manifest is checked: an artifact of another format is refused with
"retrain with this version", a damaged or truncated file is named with the fix. `papertrack label` says so in one
``error:`` line; `papertrack serve` repairs a damaged copy in the BentoML store from the registry, and refuses
(one ``error:`` line, before any worker starts) when the registry's own copy is bad.

A tiny synthetic model (tests/synthetic_corpus.py) is logged into a temporary store per test: seconds, and the
session's trained champion is never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from papertrack import __version__
from papertrack.models import manifest
from papertrack.models.manifest import DamagedArtifact, IncompatibleArtifact
from tests.conftest import bentoml_home
from tests.synthetic_corpus import fitted_predictor

os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

ABSTRACT = "attention transformer heads tokens softmax query keys sequence. We report experiments on standard data."


@pytest.fixture(scope="module")
def predictor():
    return fitted_predictor(per_label=12)[0]


@pytest.fixture
def saved(predictor, tmp_path):
    folder = tmp_path / "artifacts"
    folder.mkdir()
    return folder, predictor.save_artifacts(folder)


def flip_a_byte(path: Path, at: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if at is None else at
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def flat(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- the manifest


def test_save_writes_the_predictor_and_a_manifest_with_format_version_and_digest(saved):
    folder, artifacts = saved
    assert set(artifacts) == {"predictor", "manifest"}
    assert Path(artifacts["predictor"]) == folder / "predictor.pkl"
    written = json.loads((folder / "papertrack.json").read_text(encoding="utf-8"))
    expected = hashlib.sha256((folder / "predictor.pkl").read_bytes()).hexdigest()
    assert written == {"format": 3, "papertrack": __version__, "sha256": {"predictor.pkl": expected}}
    assert manifest.check(folder) == written


def test_the_predictor_is_a_plain_pickle_and_a_model_saved_with_joblib_before_still_loads(predictor, tmp_path):
    """Since session 11 the predictor is pickled by the standard library (loads ~12x faster than joblib's
    compressed file); models of the same format saved before, as ``predictor.joblib``, answer the same."""
    import pickle

    import joblib

    from papertrack.models.artifact import TrackPredictor

    new = predictor.save(tmp_path / "predictor.pkl")
    with open(new, "rb") as stored:
        assert isinstance(pickle.load(stored), TrackPredictor)
    old = tmp_path / "predictor.joblib"
    joblib.dump(predictor, old, compress=3)  # how session 10 and before wrote it
    expected = predictor.predict([ABSTRACT], top_k=3)
    assert TrackPredictor.load(new).predict([ABSTRACT], top_k=3) == expected
    assert TrackPredictor.load(old).predict([ABSTRACT], top_k=3) == expected


def test_another_format_is_refused_with_retrain(saved):
    folder, _ = saved
    path = folder / "papertrack.json"
    path.write_text(json.dumps({"format": 1, "papertrack": "0.0.9", "sha256": {}}), encoding="utf-8")
    with pytest.raises(IncompatibleArtifact) as caught:
        manifest.check(folder, "models:/papertrack@champion")
    assert str(caught.value) == (
        "models:/papertrack@champion was written by papertrack 0.0.9 (format 1); this is format 3 — "
        "retrain with this version: papertrack train"
    )


def test_an_artifact_without_manifest_is_refused_with_retrain(saved):
    folder, _ = saved
    (folder / "papertrack.json").unlink()
    with pytest.raises(
        IncompatibleArtifact, match=r"earlier papertrack \(no format version\); this is format 3 — retrain"
    ):
        manifest.check(folder, "m")


@pytest.mark.parametrize("damage", [flip_a_byte, truncate, Path.unlink], ids=["flipped-byte", "truncated", "missing"])
def test_a_damaged_predictor_file_is_named(saved, damage):
    folder, _ = saved
    damage(folder / "predictor.pkl")
    with pytest.raises(DamagedArtifact) as caught:
        manifest.check(folder, "models:/papertrack/1")
    message = str(caught.value)
    assert message.startswith(f"{folder}/predictor.pkl of models:/papertrack/1 is ")
    assert "papertrack train" in message and caught.value.file == "predictor.pkl"


def test_a_damaged_manifest_is_named(saved):
    folder, _ = saved
    truncate(folder / "papertrack.json")
    with pytest.raises(DamagedArtifact, match=r"papertrack\.json of m is damaged"):
        manifest.check(folder, "m")


# --------------------------------------------------------------------------- a registered model


@pytest.fixture
def registered(predictor, tmp_path, monkeypatch):
    return register(predictor, tmp_path, monkeypatch)


def core_requirements() -> list[str]:
    """The requirements papertrack logs with a TF-IDF model (given, as ``train`` gives them: left out, MLflow would
    load the model in a subprocess to infer them, ~10 s a model)."""
    from papertrack.models.candidates import majority_candidate
    from papertrack.training.model_logging import pip_requirements

    return pip_requirements(majority_candidate())


def register(predictor, tmp_path: Path, monkeypatch, recorded: bool = True) -> dict:
    """``predictor`` logged as the pyfunc and registered as papertrack@champion in a temporary store, with the
    digest of every file of the model recorded on the version (``recorded=False``: without it)."""
    import mlflow

    from papertrack import store
    from papertrack.models.artifact import PaperTrackModel, signature
    from papertrack.training.model_logging import logged_files

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    mine = store.open()
    staging = tmp_path / "staging"
    staging.mkdir()
    with store.using(mine), mlflow.start_run(experiment_id=mine.experiment().experiment_id):
        logged = mlflow.pyfunc.log_model(
            name="model",
            python_model=PaperTrackModel(),
            artifacts=predictor.save_artifacts(staging),
            signature=signature(),
            pip_requirements=core_requirements(),
        )
        version = mlflow.register_model(logged.model_uri, "papertrack")
    client = mine.client()
    client.set_registered_model_alias("papertrack", "champion", version.version)
    files = json.dumps(logged_files(mine, logged.model_uri))  # the digest of every file, as the sweep records it
    tags = {"candidate": "synthetic-logreg", "data_digest": "test", manifest.FILES_TAG: files}
    if not recorded:  # a model registered by an earlier papertrack, which recorded no such digests
        tags.pop(manifest.FILES_TAG)
    for key, value in tags.items():  # as the sweep tags it
        client.set_model_version_tag("papertrack", version.version, key, value)
    (stored,) = (tmp_path / "home").rglob("predictor.pkl")
    return {
        "predictor_file": stored,
        "manifest_file": stored.parent / "papertrack.json",
        "home": tmp_path / "home",
        "store": mine,
    }


def label(tmp_path: Path, *args: str):
    from typer.testing import CliRunner

    from papertrack.cli import app

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "p1", "abstract": ABSTRACT}) + "\n", encoding="utf-8")
    return CliRunner().invoke(app, ["label", str(source), "-o", str(tmp_path / "out.jsonl"), *args])


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


# --------------------------------------------------------------------------- a planted pickle never runs


class _Planted:
    """Unpickling this writes the file MARK names: a stand-in for a pickle that runs a stranger's code."""

    def __init__(self, mark: str):
        self.mark = mark

    def __reduce__(self):
        return (Path(self.mark).write_text, ("the planted pickle ran",))


def _plant(path: Path, mark: Path) -> None:
    import pickle

    path.write_bytes(pickle.dumps(_Planted(str(mark))))


def test_a_planted_python_model_pickle_is_refused_by_name_and_never_runs(registered, tmp_path):
    mark = tmp_path / "ran"
    python_model = registered["predictor_file"].parent.parent / "python_model.pkl"
    _plant(python_model, mark)
    result = label(tmp_path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{python_model} of models:/papertrack@champion is damaged" in flat(result.output)
    assert not mark.exists()


def test_a_file_added_to_the_model_is_refused(registered, tmp_path):
    code = registered["predictor_file"].parent.parent / "code"
    code.mkdir()
    (code / "papertrack_hook.py").write_text("import os\n", encoding="utf-8")
    result = label(tmp_path)
    assert result.exit_code == 2
    assert "code/papertrack_hook.py of models:/papertrack@champion was not part of the model" in flat(result.output)


def test_a_model_without_recorded_digests_loads_with_a_warning_and_never_unpickles_its_wrapper(
    predictor, tmp_path, monkeypatch
):
    """An older model (no digests recorded): it labels, says how to re-register it, and its python_model.pkl —
    here a planted pickle — is never unpickled (papertrack builds the pyfunc wrapper itself)."""
    found = register(predictor, tmp_path, monkeypatch, recorded=False)
    mark = tmp_path / "ran"
    _plant(found["predictor_file"].parent.parent / "python_model.pkl", mark)
    result = label(tmp_path)
    assert result.exit_code == 0, result.output
    assert "logged by an earlier papertrack" in flat(result.output)
    assert "papertrack train --force" in flat(result.output)
    assert not mark.exists()


def test_a_model_folder_given_as_a_path_never_unpickles_its_wrapper(registered, tmp_path):
    import shutil

    folder = tmp_path / "bundle"
    shutil.copytree(registered["predictor_file"].parent.parent, folder)
    mark = tmp_path / "ran"
    _plant(folder / "python_model.pkl", mark)
    result = label(tmp_path, "--model", str(folder))
    assert result.exit_code == 0, result.output
    assert not mark.exists()


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
