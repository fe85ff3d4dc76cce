"""Tests for papertrack.features.ingest: JSON lines and JSON arrays (fields, ids, line numbers, bad records kept
in order, fatal syntax errors, deep nesting, streaming, content-free abstracts)."""

from __future__ import annotations

import json

import pytest

from papertrack.features.ingest import BadRecord, IngestError, Record, detect_format, iter_records, make_id
from tests.features.ingest_inputs import ABSTRACT_A, ABSTRACT_B, ABSTRACT_C, jsonl, records_of, write


def test_jsonl_fields_labels_ids_and_line_numbers(tmp_path):
    path = write(
        tmp_path / "papers.jsonl",
        jsonl(
            {"id": "p1", "title": "Fast", "abstract": ABSTRACT_A, "label": "Optimization · Everything Else"},
            {"abstract": ABSTRACT_B, "topic": "Deep Learning->Graph Neural Networks"},
        )
        + "\n   \n"
        + jsonl(
            {"id": "  ", "abstract": ABSTRACT_C, "area": "Reinforcement Learning", "subarea": ""},
            {"id": 42, "abstract": "Unlabeled but fine."},
        ),
    )
    items = list(records_of(path))
    assert [type(item) for item in items] == [Record] * 4
    first, second, third, fourth = items
    assert first == Record(
        id="p1",
        abstract=ABSTRACT_A,
        title="Fast",
        label="Optimization · Everything Else",
        area="Optimization",
        subarea="Everything Else",
        source=str(path),
        line=1,
    )
    assert (second.label, second.area, second.subarea) == (
        "Deep Learning · Graph Neural Networks",
        "Deep Learning",
        "Graph Neural Networks",
    )
    assert second.id == make_id(ABSTRACT_B) and second.title is None and second.line == 2
    assert (third.label, third.subarea, third.line) == ("Reinforcement Learning", None, 5)
    assert third.id == make_id(ABSTRACT_C)  # a blank id counts as missing
    assert (fourth.id, fourth.label, fourth.line) == ("42", None, 6)


def test_jsonl_bad_records_are_reported_in_order_never_dropped(tmp_path):
    path = write(
        tmp_path / "bad.jsonl",
        jsonl({"id": "ok", "abstract": ABSTRACT_A})
        + '{"id": "broken" "abstract": "x"}\n'
        + jsonl(
            ["not", "an", "object"],
            {"id": "e", "abstract": "   \n "},
            {"id": "n", "abstract": None},
            {"id": "num", "abstract": 3},
            {"id": "lab", "abstract": ABSTRACT_B, "label": "Deep Learning ->"},
            {"id": "lab2", "abstract": ABSTRACT_B, "label": ["Theory"]},
            {"id": "noabs", "title": "Only a title"},
        ),
    )
    items = list(records_of(path))
    assert isinstance(items[0], Record)
    bad = items[1:]
    assert all(isinstance(item, BadRecord) for item in bad)
    assert [item.line for item in bad] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert [item.kind for item in bad] == [
        "invalid",
        "invalid",
        "empty",
        "empty",
        "invalid",
        "invalid",
        "invalid",
        "invalid",
    ]
    assert [item.id for item in bad] == [None, None, "e", "n", "num", "lab", "lab2", "noabs"]
    assert bad[0].reason == "invalid JSON: Expecting ',' delimiter (column 17)"
    assert bad[0].source == str(path)
    assert bad[1].reason.startswith("JSON value is not an object")
    assert bad[2].reason == "empty abstract"
    assert "not a string" in bad[4].reason
    assert bad[5].reason.startswith("invalid label 'Deep Learning ->': empty subarea")
    assert "invalid label" in bad[6].reason
    assert "abstract" in bad[7].reason


def test_deeply_nested_jsonl_line_is_one_bad_record_not_a_crash(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    path = write(
        tmp_path / "deep.jsonl",
        jsonl({"abstract": ABSTRACT_A}) + '{"abstract": ' + deep + "}\n" + jsonl({"abstract": ABSTRACT_B}),
    )
    first, bad, last = iter_records(path)
    assert isinstance(bad, BadRecord) and bad.line == 2 and "nested too deeply" in bad.reason
    assert (first.abstract, last.abstract) == (ABSTRACT_A, ABSTRACT_B)


@pytest.mark.parametrize("abstract", ["\u0000", "\u200b\u200b", "\U0001f600\U0001f680", "… — !!"])
def test_content_free_abstracts_are_empty_records(tmp_path, abstract):
    path = write(tmp_path / "cf.jsonl", jsonl({"id": "x", "abstract": abstract}, {"abstract": ABSTRACT_A}))
    bad, good = iter_records(path)
    assert isinstance(bad, BadRecord) and bad.kind == "empty" and "no letters or digits" in bad.reason
    assert good.abstract == ABSTRACT_A


# --------------------------------------------------------------------------- JSON arrays


def test_json_array_records_carry_the_file_line_they_start_on(tmp_path):
    path = write(
        tmp_path / "papers.json",
        json.dumps(
            [
                {"abstract": ABSTRACT_A, "label": "Theory"},
                "just a string",
                {"ID": "x", "Abstract": ABSTRACT_B, "Title": " T "},
            ],
            indent=2,
        ),
    )
    assert detect_format(path) == "json"
    first, second, third = records_of(path)
    assert (first.line, first.label) == (2, "Theory")  # line 1 is the '['
    assert isinstance(second, BadRecord) and second.line == 6
    assert second.reason.startswith("JSON value is not an object")
    assert (third.id, third.title, third.line, third.abstract) == ("x", "T", 7, ABSTRACT_B)


def test_json_array_syntax_error_is_fatal_with_line(tmp_path):
    path = write(tmp_path / "broken.json", '[\n  {"abstract": "a"},\n  {"abstract": "b",}\n]\n')
    with pytest.raises(IngestError) as caught:
        list(records_of(path))
    assert caught.value.path == str(path) and caught.value.line == 3
    assert str(caught.value).startswith(f"{path}:3: invalid JSON")


def test_json_with_a_single_top_level_object_is_rejected(tmp_path):
    path = write(tmp_path / "object.json", '{\n  "abstract": "a"\n}\n')
    assert detect_format(path) == "json"  # pretty-printed: it could be {"notes": [...]}; the reader tells
    with pytest.raises(IngestError, match=r"expected a JSON array of records, or an object with a \"notes\" array"):
        list(records_of(path))


def test_deeply_nested_json_array_element_is_a_clear_fatal_error(tmp_path):
    path = write(tmp_path / "deep.json", '[{"abstract": "ok fine"}, ' + "[" * 5000 + "]" * 5000 + "]")
    items = iter_records(path)
    assert next(items).abstract == "ok fine"  # streamed: the first record comes before the bad one is read
    with pytest.raises(IngestError, match=r"deep\.json:1: record 2: JSON nested too deeply"):
        next(items)


def test_json_array_is_streamed_and_reports_a_broken_tail_with_its_line(tmp_path):
    records = [{"id": f"r{i}", "abstract": f"{ABSTRACT_A} number {i}"} for i in range(3000)]
    text = json.dumps(records, indent=1)
    path = write(tmp_path / "big.json", text[:-2] + ", {oops]\n")
    items = iter_records(path)
    got = [next(items) for _ in range(3000)]
    assert [r.id for r in got] == [f"r{i}" for i in range(3000)] and [r.line for r in got[:2]] == [2, 6]
    assert got[-1].line == 2 + 4 * 2999  # counted across the reader's blocks
    with pytest.raises(IngestError, match=r"big\.json:\d+: invalid JSON"):
        next(items)


def test_json_file_holding_one_object_is_fatal_not_zero_rows(tmp_path):
    path = write(tmp_path / "wrapped.json", json.dumps({"papers": [{"abstract": ABSTRACT_A}]}) + "\n")
    assert detect_format(path) == "json"
    with pytest.raises(IngestError, match=r"wrapped\.json:1: expected a JSON array of records, .*'papers'"):
        list(iter_records(path))
