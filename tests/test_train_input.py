"""Training on data cross-validation cannot use fails with one clear line naming the file and what to change
(not a raw scikit-learn message)."""

from __future__ import annotations

import json

from typer.testing import CliRunner


def run_train(tmp_path, monkeypatch, records, *extra):
    from papertrack.cli import app

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = CliRunner().invoke(app, ["train", "--data", str(data), "-c", "tfidf-word-cnb", *extra])
    return result, " ".join(result.output.split())


def test_one_label_names_the_file_and_the_label(tmp_path, monkeypatch):
    records = [{"abstract": f"We study kernels number {i} in depth.", "label": "Theory"} for i in range(12)]
    result, output = run_train(tmp_path, monkeypatch, records)
    assert result.exit_code == 2, output
    assert "data.jsonl" in output and "every record has the label 'Theory'" in output
    assert "Traceback" not in output


def test_fewer_records_than_folds_says_to_lower_folds(tmp_path, monkeypatch):
    records = [
        {"abstract": f"We study topic {i} carefully.", "label": label}
        for i, label in enumerate(["Theory", "Optimization", "Theory"])
    ]
    result, output = run_train(tmp_path, monkeypatch, records, "--folds", "5")
    assert result.exit_code == 2, output
    assert "3 usable labeled record(s), fewer than --folds 5" in output and "data.jsonl" in output
