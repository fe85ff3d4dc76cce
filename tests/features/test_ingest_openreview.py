"""OpenReview note exports (API v1 and v2) and nested JSON read by the one ingest parser: a list of notes or
{"notes": [...]}, content.X or content.X.value, the id from id/forum/number, dotted column paths, and the error
naming the first record's fields when a column matches nothing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from papertrack.features.ingest import BadRecord, IngestError, Record, detect_format, iter_records, normalise_text
from papertrack.features.ingest.columns import check_inputs, use_columns

from ..conftest import shared_data_dir

SYNTHETIC = "We propose a method for {topic} that improves sample efficiency on benchmark {n} by a wide margin."
TOPICS = ["graph neural networks", "reinforcement learning", "causal inference", "diffusion models"]


def abstracts(count: int = 200) -> list[tuple[str, str]]:
    """(title, abstract) pairs: the shared data's first ``count`` papers, or synthetic text without it."""
    path = shared_data_dir() / "iclr2024_topics.jsonl"
    if path.exists():
        with open(path, encoding="utf-8") as lines:
            papers = [json.loads(line) for _, line in zip(range(count), lines)]
        return [(p["title"], p["abstract"]) for p in papers]
    return [(f"Paper {n}", SYNTHETIC.format(topic=TOPICS[n % len(TOPICS)], n=n)) for n in range(count)]


def v2_note(n: int, title: str, abstract: str) -> dict:
    return {
        "id": f"note{n:04d}",
        "forum": f"note{n:04d}",
        "number": n + 1,
        "invitations": ["ICML.cc/2025/Conference/-/Submission"],
        "content": {
            "title": {"value": title},
            "abstract": {"value": abstract},
            "authors": {"value": ["A. Author", "B. Author"]},
            "venue": {"value": "ICML 2025 Conference Submission"},
        },
    }


def v1_note(n: int, title: str, abstract: str) -> dict:
    return {
        "id": f"v1note{n:04d}",
        "forum": f"v1note{n:04d}",
        "number": n + 1,
        "invitation": "ICLR.cc/2024/Conference/-/Blind_Submission",
        "content": {"title": title, "abstract": abstract, "authors": ["A. Author"], "keywords": ["x"]},
    }


def write(path: Path, value: object, indent: int | None = None) -> Path:
    path.write_text(json.dumps(value, indent=indent), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("make", "wrap", "indent"),
    [
        (v2_note, False, None),
        (v2_note, True, 2),
        (v1_note, False, 2),
        (v1_note, True, None),
    ],
    ids=["v2-list", "v2-notes-pretty", "v1-list-pretty", "v1-notes"],
)
def test_an_openreview_export_of_200_notes_gives_200_records_with_their_ids_and_numbers(tmp_path, make, wrap, indent):
    papers = abstracts(200)
    notes = [make(n, title, abstract) for n, (title, abstract) in enumerate(papers)]
    value = {"notes": notes, "count": len(notes)} if wrap else notes
    path = write(tmp_path / "export.json", value, indent)
    assert detect_format(path) == "json"
    items = list(iter_records(path))
    assert [type(item) for item in items] == [Record] * 200  # 200 rows, 0 errors
    assert [r.id for r in items] == [note["id"] for note in notes]
    assert [r.number for r in items] == list(range(1, 201))
    assert [(r.title, r.abstract) for r in items[:3]] == [(t, normalise_text(a)) for t, a in papers[:3]]
    assert items[0].authors.startswith("A. Author")


def test_openreview_notes_as_json_lines_and_through_stdin_without_a_name(tmp_path):
    notes = [v2_note(n, f"T{n}", SYNTHETIC.format(topic="x", n=n)) for n in range(3)]
    lines = tmp_path / "notes.jsonl"
    lines.write_text("".join(json.dumps(n) + "\n" for n in notes), encoding="utf-8")
    assert [r.number for r in iter_records(lines)] == [1, 2, 3]
    nameless = write(tmp_path / "download", {"notes": notes})  # e.g. a copy of standard input: no extension
    assert detect_format(nameless) == "json"
    assert [r.id for r in iter_records(nameless)] == ["note0000", "note0001", "note0002"]
    packed = tmp_path / "notes.json.gz"
    packed.write_bytes(gzip.compress(json.dumps({"count": 3, "notes": notes}, indent=1).encode()))
    assert [r.id for r in iter_records(packed)] == ["note0000", "note0001", "note0002"]


def test_a_note_without_id_takes_its_forum_then_its_number(tmp_path):
    text = SYNTHETIC.format(topic="x", n=1)
    path = write(
        tmp_path / "n.json",
        [
            {"forum": "F1", "number": 4, "content": {"abstract": {"value": text}}},
            {"number": 5, "content": {"abstract": text + " two"}},
        ],
    )
    first, second = iter_records(path)
    assert (first.id, first.number, second.id, second.number) == ("F1", 4, "5", 5)


def test_records_of_a_pretty_printed_array_carry_their_file_lines(tmp_path):
    notes = [v2_note(n, f"T{n}", SYNTHETIC.format(topic="x", n=n)) for n in range(3)]
    path = write(tmp_path / "n.json", notes, indent=2)
    text_lines = path.read_text(encoding="utf-8").splitlines()
    starts = [number for number, line in enumerate(text_lines, start=1) if line == "  {"]
    assert [r.line for r in iter_records(path)] == starts and starts[0] == 2 and len(set(starts)) == 3


def test_a_dotted_column_path_reads_nested_json(tmp_path):
    text = SYNTHETIC.format(topic="x", n=1)
    path = write(
        tmp_path / "nested.json",
        [{"meta": {"key": "p1"}, "paper": {"summary": {"value": text}, "heading": "Nested"}}],
    )
    with use_columns(abstract="paper.summary", title="paper.heading", id="meta.key"):
        check_inputs([path])
        (record,) = iter_records(path)
    assert (record.id, record.title, record.abstract) == ("p1", "Nested", text)
    with use_columns(abstract="content.abstract.value"):  # the full v2 path works too
        (note,) = iter_records(write(tmp_path / "v2.json", [v2_note(0, "T", text)]))
    assert note.abstract == text and note.id == "note0000"


def test_a_column_path_matching_nothing_is_an_error_listing_the_first_records_fields(tmp_path):
    text = SYNTHETIC.format(topic="x", n=1)
    path = write(tmp_path / "n.json", [{"id": "a", "paper": {"abstract": text}}], indent=2)
    with use_columns(abstract="content.abstract.value"), pytest.raises(IngestError) as caught:
        check_inputs([path])
    assert str(caught.value) == (
        f"{path}:2: the first record has no 'content.abstract.value' field (fields: id, paper); the abstract is "
        "nested: name it with --abstract-column paper.abstract"
    )
    with use_columns(id="number"), pytest.raises(IngestError, match=r"no 'number' field \(fields: id, paper\)"):
        check_inputs([path])


def test_a_record_with_the_abstract_nested_elsewhere_is_an_error_with_the_hint(tmp_path):
    text = SYNTHETIC.format(topic="x", n=1)
    path = tmp_path / "n.jsonl"
    path.write_text(json.dumps({"id": "a", "paper": {"Abstract": {"value": text}}}) + "\n", encoding="utf-8")
    (bad,) = iter_records(path)
    assert isinstance(bad, BadRecord) and bad.id == "a" and bad.line == 1
    assert bad.reason == (
        "no 'abstract' field (fields: id, paper); the abstract is nested: name it with --abstract-column "
        "paper.Abstract.value"
    )


def test_an_object_without_a_notes_array_is_fatal_naming_its_keys(tmp_path):
    path = write(tmp_path / "w.json", {"papers": [{"abstract": "x"}], "count": 1}, indent=2)
    with pytest.raises(IngestError, match=r"w\.json:1: expected a JSON array of records, or an object with .*'papers'"):
        list(iter_records(path))


def test_a_broken_note_in_a_notes_export_is_fatal_with_its_file_line(tmp_path):
    notes = [v1_note(n, f"T{n}", SYNTHETIC.format(topic="x", n=n)) for n in range(2)]
    text = json.dumps({"notes": notes}, indent=2)
    path = tmp_path / "n.json"
    path.write_text(text.replace('"number": 2,', '"number": 2,,'), encoding="utf-8")
    broken_line = next(i for i, line in enumerate(text.splitlines(), start=1) if '"number": 2,' in line)
    items = iter_records(path)
    assert next(items).number == 1
    with pytest.raises(IngestError) as caught:
        next(items)
    assert caught.value.line == broken_line and "invalid JSON" in caught.value.message


def test_output_rows_keep_the_notes_id_and_number_to_join_them_back(tmp_path):
    from papertrack.serving.batch.labeler.rows import RowFormat

    (record,) = iter_records(write(tmp_path / "n.json", [v2_note(16, "T", SYNTHETIC.format(topic="x", n=1))]))
    answer = {"tracks": [{"label": "Theory", "probability": 0.9}], "areas": [{"area": "Theory", "probability": 0.9}]}
    line = json.loads(RowFormat("jsonl", 1).rows([(record, answer)]))
    assert (line["id"], line["number"]) == ("note0016", 17)
    csv_format = RowFormat("csv", 1)
    header, row = (csv_format.header() + csv_format.rows([(record, answer)])).decode().splitlines()
    assert header.startswith("id,number,source,") and row.startswith("note0016,17,")


def test_a_misspelt_abstract_field_gets_did_you_mean(tmp_path):
    path = tmp_path / "n.jsonl"
    path.write_text(json.dumps({"id": "a", "abstarct": SYNTHETIC.format(topic="x", n=1)}) + "\n", encoding="utf-8")
    (bad,) = iter_records(path)
    assert bad.reason == (
        "no 'abstract' field (fields: id, abstarct); did you mean \"abstarct\"? name it with --abstract-column abstarct"
    )
