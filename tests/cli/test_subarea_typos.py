"""A subarea typo in a label: the nearest known track is found, and the typo is reported once with it (the label
is kept as written, a track of its own)."""

from __future__ import annotations

import json
import logging

from papertrack.features.labels import nearest_known_label, normalise_label


def test_nearest_known_label():
    assert nearest_known_label("Theory · Learning Theroy") == "Theory · Learning Theory"
    assert nearest_known_label("theory -> learning theroy") == "Theory · Learning Theory"
    assert nearest_known_label("Theroy · Learning Theory") == "Theory · Learning Theory"
    assert nearest_known_label("Theroy") == "Theory"
    assert nearest_known_label("Theory · Learning Theory") is None  # known
    assert nearest_known_label("Theory · Quantum Foundations") is None  # nothing close: a new track


def test_a_subarea_typo_is_reported_once_with_the_nearest_track(tmp_path, caplog):
    from papertrack.features import labels
    from papertrack.training.dataset import load_dataset

    labels._warned.discard(("Theory", "Learning Theroy"))
    data = tmp_path / "typo.jsonl"
    rows = [
        {"abstract": f"We bound the sample complexity of learning {i}.", "label": "Theory · Learning Theroy"}
        for i in range(3)
    ] + [{"abstract": "A new optimiser.", "label": "Optimization · Non-Convex"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="papertrack"):
        records, _ = load_dataset(data)
    assert [r.label for r in records][0] == "Theory · Learning Theroy"  # kept as written (a new track)
    messages = [r.getMessage() for r in caplog.records if "did you mean" in r.getMessage()]
    assert messages == [
        "label 'Theory · Learning Theroy': 'Learning Theroy' is not a subarea of Theory; "
        "did you mean 'Theory · Learning Theory'? (kept as a track of its own)"
    ]
    assert normalise_label("Theory · Learning Theory") == ("Theory", "Learning Theory")
