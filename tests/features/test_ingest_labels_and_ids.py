"""Tests for papertrack.features.ingest: labels (every spelling of a track, malformed labels, labels required or
ignored) and the ids and keys of abstracts."""

from __future__ import annotations

import pytest

from papertrack.features.ingest import BadRecord, Record, abstract_key, make_id
from papertrack.features.labels import AREA_SEPARATOR, format_label, normalise_label
from papertrack.training.dataset import load_dataset
from tests.features.ingest_inputs import ABSTRACT_A, ABSTRACT_B, jsonl, records_of, write


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Deep Learning · Large Language Models", ("Deep Learning", "Large Language Models")),
        ("Deep Learning·Large Language Models", ("Deep Learning", "Large Language Models")),
        ("Deep Learning->Large Language Models", ("Deep Learning", "Large Language Models")),
        ("Deep Learning -> Large Language Models", ("Deep Learning", "Large Language Models")),
        ("  Theory \n", ("Theory", None)),
        ("\ufeffTheory", ("Theory", None)),
        ("Deep  Learning  ·  Graph Neural Networks", ("Deep Learning", "Graph Neural Networks")),
        (
            "Social Aspects · Accountability, Transparency and Interpretability",
            ("Social Aspects", "Accountability, Transparency and Interpretability"),
        ),
    ],
)
def test_normalise_label_accepts_every_spelling(text, expected):
    assert normalise_label(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty label"),
        ("   \ufeff ", "empty label"),
        ("Deep Learning ->", "empty subarea"),
        ("Deep Learning · ", "empty subarea"),
        ("-> Large Language Models", "empty area"),
        ("· Large Language Models", "empty area"),
        ("Deep Learning · LLMs · Agents", "more than one separator"),
        ("Deep Learning -> LLMs · Agents", "more than one separator"),
    ],
)
def test_normalise_label_rejects_malformed_labels(text, message):
    with pytest.raises(ValueError, match=message):
        normalise_label(text)


def test_format_label_is_the_inverse_of_normalise_label():
    assert AREA_SEPARATOR == " · "
    assert format_label("Deep Learning", "Large Language Models") == "Deep Learning · Large Language Models"
    assert format_label("Theory", None) == "Theory"
    for label in ("Deep Learning · Large Language Models", "Theory"):
        assert format_label(*normalise_label(label)) == label


@pytest.mark.parametrize(
    "spelling",
    [
        "deep learning · large language models",
        "DEEP LEARNING · LARGE LANGUAGE MODELS",
        "Deep Learning - Large Language Models",
        "Deep Learning • Large Language Models",
        "Deep Learning → Large Language Models",
        "Deep Learning · Large Language Models\u200b",
        "Deep\u200b Learning·large language Models",
        "Deep Learning \u2013 Large Language Models",
    ],
)
def test_label_spelling_variants_are_one_known_track(spelling):
    assert normalise_label(spelling) == ("Deep Learning", "Large Language Models")


def test_label_variants_do_not_split_the_taxonomy_and_unknown_areas_warn(tmp_path):
    spellings = [
        "Theory · Learning Theory",
        "theory · learning theory",
        "THEORY - LEARNING THEORY",
        "Theory → Learning Theory\u200b",
        "Theory • Learning theory",
        "Thoery · Learning Theory",
    ]
    path = write(
        tmp_path / "v.jsonl",
        jsonl(*[{"abstract": f"{ABSTRACT_A} {i}", "label": label} for i, label in enumerate(spellings)]),
    )
    records, summary = load_dataset(path)
    assert {r.label for r in records} == {"Theory · Learning Theory", "Thoery · Learning Theory"}
    assert summary.unknown_areas == {"Thoery": 1}
    assert any("outside the known taxonomy: 'Thoery' (1)" in line for line in summary.lines())


def test_labeled_false_ignores_labels_even_invalid_ones(tmp_path):
    path = write(
        tmp_path / "p.jsonl",
        jsonl({"abstract": ABSTRACT_A, "label": "Theory"}, {"abstract": ABSTRACT_B, "label": "A · B · C"}),
    )
    items = list(records_of(path, labeled=False))
    assert [(item.label, item.area, item.subarea) for item in items] == [(None, None, None)] * 2
    assert isinstance(list(records_of(path))[1], BadRecord)


def test_labeled_true_requires_a_label_field(tmp_path):
    path = write(tmp_path / "p.jsonl", jsonl({"abstract": ABSTRACT_A}))
    (item,) = records_of(path, labeled=True)
    assert isinstance(item, BadRecord) and item.reason.startswith("no label (field 'label'")
    (item,) = records_of(path)
    assert isinstance(item, Record) and item.label is None


# --------------------------------------------------------------------------- ids and keys


def test_abstract_key_casefolds_and_collapses_whitespace():
    assert abstract_key("  We  PROPOSE\n\ta Method. ") == "we propose a method."
    assert abstract_key("Straße") == abstract_key("STRASSE")


def test_make_id_is_stable_and_whitespace_insensitive():
    # sha1("hello world"): a fixed value, so ids stay the same across runs and machines.
    assert make_id("Hello  World") == "sha1-2aae6c35c94fcfb4"
    assert make_id("hello world\n") == make_id(" HELLO WORLD")
    assert make_id(ABSTRACT_A) != make_id(ABSTRACT_B)
