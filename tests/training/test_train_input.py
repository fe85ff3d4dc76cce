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


# --------------------------------------------------------------------------- data TF-IDF keeps no word of


def two_labels(abstracts):
    return [{"abstract": a, "label": ["Theory", "Optimization"][i % 2]} for i, a in enumerate(abstracts)]


def test_abstracts_of_one_repeated_word_are_one_error_line(tmp_path, monkeypatch):
    """Every abstract 'graph graph …' (distinct lengths, so not duplicates): scikit-learn's "After pruning, no
    terms remain" traceback before; now refused before any fit."""
    result, output = run_train(tmp_path, monkeypatch, two_labels(["graph " * (i + 1) for i in range(12)]))
    assert result.exit_code == 2, output
    assert "Traceback" not in output and "After pruning" not in output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {tmp_path / 'data.jsonl'}: no word is in at least 2")
    assert "'graph' is in over 90% of them" in output and "so TF-IDF keeps no term to learn from" in output
    assert not (tmp_path / "home").exists()  # refused before the store was created


def test_abstracts_of_stop_words_only_are_one_error_line(tmp_path, monkeypatch):
    words = ["the", "of", "and", "which", "a"]
    abstracts = [" ".join(words[: i % 5 + 1] * (i + 1)) for i in range(12)]
    result, output = run_train(tmp_path, monkeypatch, two_labels(abstracts))
    assert result.exit_code == 2, output
    assert "empty vocabulary" not in output and "Traceback" not in output
    assert "data.jsonl: the 12 abstracts hold no word to learn from (only English stop words" in output


def test_abstracts_sharing_no_word_are_one_error_line(tmp_path, monkeypatch):
    """min_df = 2: a word must be in two records; here every word is in one only."""
    abstracts = [f"alpha{i} beta{i} gamma{i}" for i in range(12)]
    result, output = run_train(tmp_path, monkeypatch, two_labels(abstracts))
    assert result.exit_code == 2, output
    assert "36 word(s) are in a single abstract" in output and "Traceback" not in output


def test_ordinary_abstracts_pass_the_vocabulary_check():
    from types import SimpleNamespace

    from papertrack.training.preflight import check_vocabulary

    abstracts = ["graph networks for molecules", "graph kernels and networks", "convex optimization of losses"]
    check_vocabulary([SimpleNamespace(abstract=a) for a in abstracts], "d.jsonl")  # 'networks', 'graph': 2 of 3
    check_vocabulary([], "d.jsonl")  # nothing to check (check_trainable says there is no record)
