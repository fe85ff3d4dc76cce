"""Helpers for the tests of a model's artifact and its integrity: a tiny synthetic model registered as
papertrack@champion in a temporary store, `papertrack label` run on it, files damaged (a flipped byte, a truncated
file) or planted (a pickle that would run code if it were ever unpickled)."""

from __future__ import annotations

import json
from pathlib import Path

from papertrack.models import manifest

ABSTRACT = "attention transformer heads tokens softmax query keys sequence. We report experiments on standard data."


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


class _Planted:
    """Unpickling this writes the file MARK names: a stand-in for a pickle that runs a stranger's code."""

    def __init__(self, mark: str):
        self.mark = mark

    def __reduce__(self):
        return (Path(self.mark).write_text, ("the planted pickle ran",))


def _plant(path: Path, mark: Path) -> None:
    import pickle

    path.write_bytes(pickle.dumps(_Planted(str(mark))))
