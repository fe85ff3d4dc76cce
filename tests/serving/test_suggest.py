"""papertrack suggest: which abstracts to label next, and the file a person edits and feeds back."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import sparse

from papertrack.features.ingest import SUGGESTED_MARKER, iter_records
from papertrack.serving.batch.suggest import choose, read_pool, suggest, uncertainty, write_suggestions
from papertrack.training.dataset import load_dataset
from tests.synthetic_corpus import TOPICS, fitted_predictor, paper


def _proba(rows: list[list[float]]) -> np.ndarray:
    p = np.asarray(rows, dtype=np.float64)
    return p / p.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------- picking


def test_uncertainty_picks_the_smallest_margins_first():
    rng = np.random.default_rng(3)
    margins = rng.permutation(np.linspace(0.02, 0.9, 40))
    # row i: top label (0.05 + margin), runner-up 0.05, the rest shares what is left
    rows = []
    for m in margins:
        top, second = 0.05 + m, 0.05
        rest = (1.0 - top - second) / 3
        rows.append([top, second, rest, rest, rest] if rest < second else None)
    keep = [i for i, r in enumerate(rows) if r is not None]
    proba = _proba([rows[i] for i in keep])
    expected = [keep.index(i) for i in sorted(keep, key=lambda i: margins[i])[:7]]
    assert choose(proba, 7, "uncertainty", measure="margin") == expected


def test_entropy_ranks_a_flat_distribution_above_a_peaked_one():
    proba = _proba([[0.9, 0.05, 0.05], [0.34, 0.33, 0.33], [0.6, 0.3, 0.1]])
    scores = uncertainty(proba, "entropy")
    assert scores.argmax() == 1 and scores.argmin() == 0
    assert 0.99 < scores[1] <= 1.0
    assert choose(proba, 2, "uncertainty", measure="entropy") == [1, 2]


def test_diverse_picks_are_not_duplicates_where_uncertainty_picks_are():
    rng = np.random.default_rng(0)
    # ten copies of one abstract are the most uncertain; forty distinct abstracts a little less so
    base = rng.random(30)
    distinct = rng.random((40, 30))  # all-positive, like TF-IDF rows: cosines around 0.75 between them
    features = np.vstack([np.tile(base, (10, 1)), distinct])
    features = features / np.linalg.norm(features, axis=1, keepdims=True)
    margin = np.concatenate([np.full(10, 0.01), np.linspace(0.05, 0.5, 40)])
    proba = np.column_stack([0.45 + margin / 2, 0.45 - margin / 2, np.full(50, 0.1)])
    unsure_first = choose(proba, 8, "uncertainty")
    assert set(unsure_first) <= set(range(10))  # all copies of the same abstract
    picks = choose(proba, 8, "diverse", features=sparse.csr_matrix(features))
    assert len(set(picks)) == 8
    assert sum(i < 10 for i in picks) == 1  # one copy, not eight
    cosine = features[picks] @ features[picks].T
    assert cosine[~np.eye(8, dtype=bool)].max() < 0.99
    # the copy taken is the most uncertain item, and the others are among the more uncertain ones
    assert picks[0] < 10 and all(i < 10 + 20 for i in picks)
    # even when distinct items cannot compete on uncertainty, a copy comes only once they are all taken
    few = choose(proba[:13], 5, "diverse", features=sparse.csr_matrix(features[:13]), diversity=0.1)
    assert few[0] < 10 and set(few[1:4]) == {10, 11, 12} and few[4] < 10


def test_random_is_reproducible_and_without_repeats():
    proba = _proba(np.random.default_rng(1).random((30, 4)).tolist())
    first, again = choose(proba, 10, "random", seed=5), choose(proba, 10, "random", seed=5)
    assert first == again and len(set(first)) == 10
    assert choose(proba, 10, "random", seed=6) != first
    assert sorted(choose(proba, 99, "random")) == list(range(30))  # n larger than the pool: everything once


# --------------------------------------------------------------------------- the file to edit, round trip


@pytest.fixture(scope="module")
def model():
    predictor, _, _ = fitted_predictor()
    return predictor


@pytest.fixture()
def dump(tmp_path):
    """A text dump in the labeled layout: label, authors, abstract (labels are ignored by suggest)."""
    rng = np.random.default_rng(11)
    blocks = ["Conference 2025 Papers"]
    for i, (label, words) in enumerate(list(TOPICS.items()) * 3):
        mixed = words.split() + list(TOPICS.values())[(i + 1) % len(TOPICS)].split()  # two topics: unsure
        blocks += [label, f"Ada Lovelace, Author {i} 等", paper(mixed, rng, purity=0.8)]
    path = tmp_path / "dump.txt"
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def test_text_output_round_trips_with_labels_authors_and_the_marker(model, dump, tmp_path):
    pool = read_pool([dump])
    assert len(pool.records) == 18 and not pool.bad and pool.headers == 1
    picks = suggest(model, pool.records, 6, "diverse")
    assert len(picks) == 6 and len({p.record.id for p in picks}) == 6
    out = write_suggestions(tmp_path / "to_label.txt", picks, strategy="diverse", model="test")
    text = out.read_text(encoding="utf-8")
    assert sum(line.startswith(SUGGESTED_MARKER) for line in text.splitlines()) == 6
    assert sum(line.startswith("# top-3: ") for line in text.splitlines()) == 6

    records = [r for r in iter_records(out) if not hasattr(r, "reason")]
    assert len(records) == 6
    by_id = {p.record.id: p for p in picks}
    for record in records:
        pick = by_id[record.id]  # same abstract, same id
        assert record.abstract == pick.record.abstract
        assert record.authors == pick.record.authors == f"Ada Lovelace, {record.authors.split(', ')[1]}"
        assert record.authors.endswith(" et al.")  # "等" in the dump, one spelling in records
        assert record.label == pick.guess == pick.tracks[0]["label"]
        assert record.suggested

    # untouched: nothing to train on by default, everything with --accept-suggested
    kept, summary = load_dataset(out)
    assert kept == [] and summary.suggested == 6 and summary.read == 6
    assert any("model-suggested" in line for line in summary.lines())
    kept, summary = load_dataset(out, accept_suggested=True)
    assert [r.label for r in kept] == [p.guess for p in picks] and summary.suggested == 6

    # a person fixes the first label (marker left in place) and confirms the second (marker deleted)
    lines = text.splitlines()
    label_lines = [
        i + 1 + next(j for j, line in enumerate(lines[i + 1 :]) if not line.startswith("#"))
        for i, line in enumerate(lines)
        if line.startswith(SUGGESTED_MARKER)
    ]
    other = next(label for label in TOPICS if label != lines[label_lines[0]])
    lines[label_lines[0]] = other
    second_marker = next(i for i, line in enumerate(lines) if line.startswith(SUGGESTED_MARKER) and i > label_lines[0])
    del lines[second_marker]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept, summary = load_dataset(out)
    assert [r.label for r in kept] == [other, picks[1].guess]
    assert summary.suggested == 4 and summary.kept == 2


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_jsonl_and_csv_outputs_round_trip_with_the_marker(model, dump, tmp_path, suffix):
    picks = suggest(model, read_pool([dump]).records, 4, "uncertainty")
    out = write_suggestions(tmp_path / f"to_label{suffix}", picks, strategy="uncertainty", model="test")
    records = list(iter_records(out))
    assert [r.label for r in records] == [p.guess for p in picks]
    assert all(r.suggested for r in records)
    assert [r.authors for r in records] == [p.record.authors for p in picks]
    if suffix == ".jsonl":
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [len(row["top3"]) for row in rows] == [3] * 4
        assert rows[0]["uncertainty"] >= rows[-1]["uncertainty"]  # most uncertain first
        rows[0]["label"] = next(label for label in TOPICS if label != rows[0]["label"])
        out.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        kept, summary = load_dataset(out)
        assert [r.label for r in kept] == [rows[0]["label"]] and summary.suggested == 3


def test_uncertainty_strategy_on_a_real_model_takes_the_least_sure(model, dump):
    records = read_pool([dump]).records
    proba = model.predict_proba([r.abstract for r in records])
    top2 = np.sort(proba, axis=1)[:, ::-1][:, :2]
    margins = top2[:, 0] - top2[:, 1]
    picks = suggest(model, records, 5, "uncertainty")
    chosen = {p.record.id for p in picks}
    assert chosen == {records[i].id for i in np.argsort(margins, kind="stable")[:5]}


def test_comment_lines_and_a_hash_in_running_text(tmp_path):
    path = tmp_path / "dump.txt"
    path.write_text(
        "# notes about this file\n# model-suggested: Theory\nTheory\n\nAda Lovelace, Alan Turing\n\n"
        "We rank\n#1 on the leaderboard with a bound.\n",
        encoding="utf-8",
    )
    (record,) = list(iter_records(path))
    assert record.abstract == "We rank #1 on the leaderboard with a bound."  # "#1" is text, not a comment
    assert record.label == "Theory" and record.suggested and record.authors == "Ada Lovelace, Alan Turing"


# --------------------------------------------------------------------------- the command


def test_suggest_command_with_the_registered_champion(trained, tmp_path, data_dir):
    out = tmp_path / "picks.txt"
    from typer.testing import CliRunner

    from papertrack.cli import app

    result = CliRunner().invoke(
        app,
        [
            "suggest",
            str(data_dir / "samples" / "unlabeled_dump.txt"),
            "-n",
            "5",
            "-o",
            str(out),
            "--strategy",
            "diverse",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Picked 5 of" in result.output
    records = list(iter_records(out))
    assert len(records) == 5 and all(r.suggested and r.label for r in records)
    bad = CliRunner().invoke(app, ["suggest", str(out), "-o", str(tmp_path / "x.pdf")])
    assert bad.exit_code == 2 and "must end in .txt" in bad.output


def test_train_leaves_untouched_guesses_out_unless_accepted(trained, tmp_path):
    """train --data picks: every label still the model's guess is skipped (and said so), so nothing is left."""
    from typer.testing import CliRunner

    from papertrack.cli import app

    out = tmp_path / "picks.jsonl"
    result = CliRunner().invoke(
        app, ["suggest", str(trained["data"]), "-n", "3", "-o", str(out), "--strategy", "random"]
    )
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["train", "--data", str(out), "-c", "tfidf-word-cnb", "--no-register"])
    assert result.exit_code == 2
    assert "skipped 3 model-suggested labels" in result.output and "no usable labeled record" in result.output
    # listed before the training data, the guesses do not hide the human labels of the same abstracts
    own = load_dataset([trained["data"]])[1].duplicates  # the training file's own (one 2025 paper twice)
    kept, summary = load_dataset([out, trained["data"]])
    assert summary.suggested == 3 and summary.duplicates == own
    kept, summary = load_dataset([out, trained["data"]], accept_suggested=True)
    assert summary.suggested == 3 and summary.duplicates == own + 3


def test_picks_without_authors_are_still_read_as_a_labeled_dump(model, tmp_path):
    """An unlabeled dump has no authors lines: the comments above the label lines tell the layout."""
    rng = np.random.default_rng(2)
    dump = tmp_path / "unlabeled.txt"
    dump.write_text(
        "New papers\n\n" + "\n\n".join(paper(w.split(), rng) for w in TOPICS.values()) + "\n", encoding="utf-8"
    )
    picks = suggest(model, read_pool([dump]).records, 3, "diverse")
    out = write_suggestions(tmp_path / "picks.txt", picks, strategy="diverse", model="test")
    lines = out.read_text(encoding="utf-8").splitlines()
    records = list(iter_records(out))
    assert [r.label for r in records] == [p.guess for p in picks] and all(r.suggested for r in records)
    # with every marker deleted (all guesses checked), the "# top-3:" comments still tell the layout
    out.write_text("\n".join(line for line in lines if not line.startswith(SUGGESTED_MARKER)) + "\n", encoding="utf-8")
    kept, summary = load_dataset(out)
    assert [r.label for r in kept] == [p.guess for p in picks] and summary.suggested == 0
