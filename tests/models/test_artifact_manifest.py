"""The artifact's format version and integrity: a model is saved with a manifest (format version, papertrack
version, sha256 of the pickled predictor); an artifact of another format or without a manifest is refused with
"retrain with this version", a damaged, truncated or missing file is named with the fix. The predictor is a plain
pickle, and a model saved with joblib before still loads."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from papertrack import __version__
from papertrack.models import manifest
from papertrack.models.manifest import DamagedArtifact, IncompatibleArtifact
from tests.models.model_artifacts import ABSTRACT, flip_a_byte, truncate

os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


@pytest.fixture
def saved(predictor, tmp_path):
    folder = tmp_path / "artifacts"
    folder.mkdir()
    return folder, predictor.save_artifacts(folder)


def test_save_writes_the_predictor_and_a_manifest_with_format_version_and_digest(saved):
    folder, artifacts = saved
    assert set(artifacts) == {"predictor", "taxonomies", "manifest"}
    assert Path(artifacts["predictor"]) == folder / "predictor.pkl"
    assert Path(artifacts["taxonomies"]) == folder / "taxonomies.json"
    written = json.loads((folder / "papertrack.json").read_text(encoding="utf-8"))
    expected = {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in ("predictor.pkl", "taxonomies.json")
    }
    assert written == {"format": 3, "papertrack": __version__, "sha256": expected}
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
