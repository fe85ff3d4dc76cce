"""Nothing changed, nothing retrained: the fingerprint of a sweep's inputs moves with the data, the options, the
crosswalks and the named columns, not with where the files are or --jobs; a registered version tagged with it makes
the next identical ``train`` say so and exit 0 without training (``--force`` trains)."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
from typer.testing import CliRunner

from papertrack.features.ingest.columns import use_columns
from papertrack.training.config import SweepConfig
from papertrack.training.fingerprint import FINGERPRINT_TAG, input_fingerprint, unchanged

ABSTRACT = "We prove a generalization bound for deep networks trained by stochastic gradient descent on graphs."


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "a" / "papers.jsonl"
    path.parent.mkdir()
    rows = [{"abstract": f"{ABSTRACT} {i}", "label": "Theory · Learning Theory"} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def fingerprint(data, **options):
    return input_fingerprint(SweepConfig(data_paths=[data], **options)).digest


def test_the_fingerprint_moves_with_data_options_crosswalks_and_columns_only(data, tmp_path):
    base = fingerprint(data)
    assert fingerprint(data) == base  # stable
    moved = tmp_path / "b" / "papers.jsonl"
    moved.parent.mkdir()
    shutil.copy(data, moved)
    assert fingerprint(moved) == base  # the content counts, not the folder
    assert fingerprint(data, jobs=1) == base and fingerprint(data, register=False) == base
    assert fingerprint(data, seed=1) != base and fingerprint(data, folds=3) != base
    assert fingerprint(data, crosswalks=()) != base  # no crosswalk instead of the shipped ones
    with use_columns(abstract="text"):
        assert fingerprint(data) != base
    data.write_text(data.read_text(encoding="utf-8") + json.dumps({"abstract": "x", "label": "Theory"}) + "\n")
    assert fingerprint(data) != base
    parts = input_fingerprint(SweepConfig(data_paths=[data])).parts
    assert {"options", "code", "libraries"} <= set(parts) and any(k.startswith("data 0 papers.jsonl") for k in parts)


def test_a_champion_with_the_same_fingerprint_means_nothing_to_train(data, tmp_path, monkeypatch):
    from papertrack import settings, store

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    opened = store.open()
    mine = input_fingerprint(SweepConfig(data_paths=[data]))
    assert unchanged(opened, mine) is None  # nothing registered
    client = opened.client()
    client.create_registered_model(settings.MODEL_NAME)
    version = client.create_model_version(settings.MODEL_NAME, str(tmp_path)).version
    client.set_registered_model_alias(settings.MODEL_NAME, settings.CHAMPION, version)
    client.set_model_version_tag(settings.MODEL_NAME, version, "candidate", "tfidf-word-logreg")
    assert unchanged(opened, mine) is None  # a champion trained before fingerprints: train
    client.set_model_version_tag(settings.MODEL_NAME, version, FINGERPRINT_TAG, mine.digest)
    said = unchanged(opened, mine)
    assert said.startswith(f"Nothing changed since papertrack version {version} (champion, tfidf-word-logreg)")
    assert "--force retrains" in said
    assert unchanged(opened, input_fingerprint(SweepConfig(data_paths=[data], seed=9))) is None

    from papertrack.cli import app

    result = CliRunner().invoke(app, ["train", "--data", str(data)])
    assert result.exit_code == 0 and "Nothing changed since" in result.output and "Traceback" not in result.output
    assert "The store holds " in result.output and str(tmp_path / "home") in " ".join(result.output.split())


def test_the_store_says_what_it_takes_on_disk(tmp_path, monkeypatch):
    from papertrack import store

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    opened = store.open()
    opened.client()  # the database exists
    (tmp_path / "home" / "artifacts" / "run").mkdir(parents=True)
    (tmp_path / "home" / "artifacts" / "run" / "model.pkl").write_bytes(b"x" * 3 * 2**20)
    megabytes = float(opened.size_line().split("holds ")[1].split(" MB")[0].replace(",", ""))
    database = (tmp_path / "home" / "mlflow.db").stat().st_size / 2**20
    assert megabytes == pytest.approx(3 + database, abs=0.06)
    server = dataclasses.replace(opened, tracking_uri="http://127.0.0.1:9", registry_uri="http://127.0.0.1:9")
    assert server.size_line() is None  # a tracking server's files are not here
