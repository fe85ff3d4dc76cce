"""The drift report's word analyzer gives scikit-learn's terms (its ASCII shortcut included)."""

from __future__ import annotations

import json

import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from papertrack.features.text import FEATURE_SETTINGS
from papertrack.models.drift import analyzer

EDGE_CASES = [
    "",
    "a b c",  # single characters: no term
    "The ReLU_2 layer, in 3D; x_i & y-axis (GPT-4o) don't 42 42nd __init__ é",
    "Tabs\tand\nnewlines\r\nand\x0bvertical\x0cfeeds\x1fcontrol",
    "ALL CAPS AND Mixed CaSe, with the and of stop words THE AND",
    "math $O(n \\log n)$ and \\textbf{bold} and https://example.org/a_b?c=d#e",
    "Ünïcödé text goes the scikit-learn way: naïve café — résumé",
    "snake_case_words and CamelCase and dots.in.words and 1.5e-3",
]


def test_edge_cases_give_scikit_learns_terms():
    expected = TfidfVectorizer(**FEATURE_SETTINGS["word"]).build_analyzer()
    analyze = analyzer()
    for text in EDGE_CASES:
        assert analyze(text) == expected(text), text


def test_every_labeled_abstract_gives_scikit_learns_terms(data_dir):
    expected = TfidfVectorizer(**FEATURE_SETTINGS["word"]).build_analyzer()
    analyze = analyzer()
    texts = []
    for name in ("iclr2024_topics.jsonl", "icml2024_topics.jsonl", "iclr2025_dev_topics.jsonl"):
        with open(data_dir / name, encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                texts += [record["abstract"], record["title"]]
    assert len(texts) > 10_000
    assert sum(text.isascii() for text in texts) > 0.8 * len(texts)  # the shortcut is what is tested
    different = [text for text in texts if analyze(text) != expected(text)]
    assert different == [], f"{len(different)} texts differ, e.g. {different[:1]!r}"


@pytest.mark.parametrize("text", ["x" * 3 + " yy z", "_ __ ___", "0 00 000"])
def test_short_runs_and_underscores(text):
    assert analyzer()(text) == TfidfVectorizer(**FEATURE_SETTINGS["word"]).build_analyzer()(text)
