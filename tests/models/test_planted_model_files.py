"""Files planted in a model never run: a pickle planted as the pyfunc wrapper is refused by name and never
unpickled (also in a model registered without recorded digests, or given as a folder), and a file added to the
model is refused."""

from __future__ import annotations

import os

from tests.models.model_artifacts import _plant, flat, label, register

os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


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
