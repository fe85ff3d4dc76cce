"""Labeled input that overlaps the model's training data: the model's neighbour index knows its training
abstracts, and `papertrack label` says how many labeled records it trained on (their accuracy is no fair figure)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

TRAINED_ON = [
    "We bound the sample complexity of learning halfspaces with margin under label noise.",
    "A diffusion model for protein structure generation with equivariant networks.",
]


def _fake_backend_with_index():
    from types import SimpleNamespace

    from papertrack.models.neighbors import NeighborIndex
    from tests.fake_backend import FakeBackend

    index = NeighborIndex.build(TRAINED_ON, ["t1", "t2"], [None, None], ["Theory", "Deep Learning"])

    class Backend(FakeBackend):
        predictor = SimpleNamespace(neighbors=index, training_profile=None)

    return Backend


def test_neighbor_index_knows_its_training_abstracts():
    backend = _fake_backend_with_index()
    index = backend.predictor.neighbors
    assert index.contains(TRAINED_ON[0]) and index.contains("  " + TRAINED_ON[1].replace(" ", "\n  ", 3))
    assert not index.contains("We bound the sample complexity of learning halfspaces, differently.")


def test_label_says_when_labeled_input_is_training_data(tmp_path, monkeypatch):
    import papertrack.serving.batch.labeler as labeler
    from papertrack.cli import app

    monkeypatch.setattr(labeler, "LocalBackend", _fake_backend_with_index())
    dump = tmp_path / "dump.jsonl"
    rows = [
        {"abstract": TRAINED_ON[0], "label": "Theory"},
        {"abstract": TRAINED_ON[1], "label": "Deep Learning"},
        {"abstract": "An unseen abstract about optimisation of transformers.", "label": "Optimization"},
        {"abstract": "An unlabeled abstract about something else entirely."},
    ]
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = CliRunner().invoke(app, ["label", str(dump), "-o", str(tmp_path / "out.csv"), "--no-progress"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "3 inputs had a label" in text
    assert "note: 2 of 3 labeled records are in the model's training data: their accuracy is not a fair figure" in text

    dump.write_text(json.dumps(rows[2]) + "\n", encoding="utf-8")  # nothing it trained on: no note
    result = CliRunner().invoke(app, ["label", str(dump), "-o", str(tmp_path / "out2.csv"), "--no-progress"])
    assert result.exit_code == 0 and "training data" not in result.output
