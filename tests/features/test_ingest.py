"""Tests for papertrack.features.ingest: every input layout, the real samples and bad input."""

from __future__ import annotations

import gzip
import json
from dataclasses import fields
from pathlib import Path

import pytest

from papertrack.features.ingest import (
    FORMATS,
    BadRecord,
    IngestError,
    Record,
    abstract_key,
    detect_format,
    iter_records,
    make_id,
)
from papertrack.features.labels import AREA_SEPARATOR, KNOWN_AREAS, format_label, normalise_label
from papertrack.training.dataset import LoadSummary, load_dataset


def records_of(*args, **kwargs):
    """``iter_records`` without the BadRecords reporting a text dump's header paragraph."""
    return [
        item for item in iter_records(*args, **kwargs) if not (isinstance(item, BadRecord) and item.kind == "header")
    ]


SHARED = Path(__file__).parents[3] / "shared" / "data"

ABSTRACT_A = "We propose a new optimiser. It converges faster than Adam on every benchmark we tried."
ABSTRACT_B = "Graph neural networks struggle with long-range dependencies. We add virtual nodes."
ABSTRACT_C = "Reward models are brittle. We study how preference data shapes them."


def write(path: Path, text: str, *, compress: bool = False, encoding: str = "utf-8") -> Path:
    """Write ``text`` byte-exactly (no newline translation), gzip-compressed when asked."""
    data = text.encode(encoding)
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def jsonl(*objects: object) -> str:
    return "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in objects)


def records(items: list) -> list[Record]:
    return [item for item in items if isinstance(item, Record)]


def shared_file(relative: str) -> Path:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"shared sample {path} is not available")
    return path


# A small labeled text dump in the layout pasted from the paper-search page.
LABELED_TEXT = """论文检索

Deep Learning · Large Language Models

Ada Lovelace, Alan Turing 等

We present a scalable method for instruction tuning. It needs
no human labels.

Theory

Kurt Gödel, Emmy Noether, John E. Smith

Tight bounds for the sample complexity of $\\epsilon$-optimal learners are derived.

Reinforcement Learning -> Deep RL

Agents that plan with learned models are studied. Unlike prior work, our agent never sees rewards.

A second paragraph continues the same abstract.
"""


# --------------------------------------------------------------------------- labels and ids


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


def test_abstract_key_casefolds_and_collapses_whitespace():
    assert abstract_key("  We  PROPOSE\n\ta Method. ") == "we propose a method."
    assert abstract_key("Straße") == abstract_key("STRASSE")


def test_make_id_is_stable_and_whitespace_insensitive():
    # sha1("hello world"): a fixed value, so ids stay the same across runs and machines.
    assert make_id("Hello  World") == "sha1-2aae6c35c94fcfb4"
    assert make_id("hello world\n") == make_id(" HELLO WORLD")
    assert make_id(ABSTRACT_A) != make_id(ABSTRACT_B)


def test_ingest_error_message_names_path_and_line():
    error = IngestError("data/x.jsonl", 7, "invalid JSON")
    assert (error.path, error.line, error.message) == ("data/x.jsonl", 7, "invalid JSON")
    assert str(error) == "data/x.jsonl:7: invalid JSON"
    assert str(IngestError("data/x.jsonl", None, "file is empty")) == "data/x.jsonl: file is empty"


# --------------------------------------------------------------------------- JSON lines, JSON, CSV


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


def test_csv_headers_quoting_and_multiline_fields(tmp_path):
    path = write(
        tmp_path / "papers.csv",
        " ID , Title ,ABSTRACT, Label\n"
        f'p1,"Fast, really",{ABSTRACT_A},Optimization · Everything Else\n'
        "\n"
        'p2,,"Line one, with a comma\nline two of the same abstract",Theory\n'
        f"p3,,{ABSTRACT_C},\n"
        "p4,,,Theory\n"
        "p5,too,many,fields,here\n",
    )
    assert detect_format(path) == "csv"
    items = list(records_of(path))
    assert [item.line for item in items] == [2, 4, 6, 7, 8]
    p1, p2, p3, p4, p5 = items
    assert (p1.id, p1.title, p1.label, p1.abstract) == (
        "p1",
        "Fast, really",
        "Optimization · Everything Else",
        ABSTRACT_A,
    )
    assert p2.abstract == "Line one, with a comma line two of the same abstract" and p2.title is None
    assert isinstance(p3, Record) and p3.label is None
    assert isinstance(p4, BadRecord) and (p4.kind, p4.id) == ("empty", "p4")
    assert isinstance(p5, BadRecord) and p5.kind == "invalid" and "5 fields" in p5.reason


def test_csv_area_and_subarea_columns(tmp_path):
    path = write(tmp_path / "areas.csv", f"abstract,area,subarea\n{ABSTRACT_A},Deep Learning,Generative Models\n")
    (record,) = records_of(path, labeled=True)
    assert record.label == "Deep Learning · Generative Models"


def test_csv_without_abstract_column_is_fatal_on_line_1(tmp_path):
    path = write(tmp_path / "no_abstract.csv", "id,title,summary\n1,A,Some text.\n")
    with pytest.raises(IngestError) as caught:
        list(records_of(path))
    assert caught.value.line == 1
    assert str(caught.value).startswith(f"{path}:1: CSV has no 'abstract' column")


def test_csv_field_over_the_csv_module_default_limit_is_a_record(tmp_path):
    """One field over 131,072 characters used to abort the whole file (csv.Error); now it is one record."""
    path = write(tmp_path / "huge.csv", f"abstract\n{ABSTRACT_A}\n{'x' * 200_000}\n{ABSTRACT_B}\n")
    first, huge, last = iter_records(path)
    assert len(huge.abstract) == 200_000 and huge.line == 3 and last.abstract == ABSTRACT_B


# --------------------------------------------------------------------------- text layouts


def test_text_labeled_layout(tmp_path):
    path = write(tmp_path / "dump.txt", LABELED_TEXT)
    assert detect_format(path) == "text-labeled"
    first, second, third = records_of(path, labeled=True)
    assert (first.label, first.area, first.subarea) == (
        "Deep Learning · Large Language Models",
        "Deep Learning",
        "Large Language Models",
    )
    assert first.abstract == "We present a scalable method for instruction tuning. It needs no human labels."
    assert (first.line, first.title, first.id) == (3, None, make_id(first.abstract))
    assert (second.label, second.subarea, second.line) == ("Theory", None, 10)
    assert second.abstract.startswith("Tight bounds") and "Gödel" not in second.abstract
    assert third.label == "Reinforcement Learning · Deep RL"
    assert third.abstract.endswith("never sees rewards. A second paragraph continues the same abstract.")


def test_text_labeled_without_authors_block_and_et_al_marker(tmp_path):
    path = write(
        tmp_path / "no_authors.txt",
        "Theory\n\n"
        "We prove a lower bound for learning halfspaces with noise, which matches known upper bounds.\n\n"
        "Deep Learning · Transformers\n\nA. Vaswani, N. Shazeer et al.\n\nAttention is all you need, we argue.\n",
    )
    first, second = records_of(path)
    assert first.label == "Theory" and first.abstract.startswith("We prove a lower bound")
    assert first.line == 1  # no header: the first block is already a label line
    assert second.abstract == "Attention is all you need, we argue."


def test_text_labeled_label_without_abstract_is_a_bad_record(tmp_path):
    path = write(
        tmp_path / "missing.txt",
        "Header\n\n"
        "Deep Learning · X\n\nAda Lovelace, Alan Turing\n\n"
        "Theory\n\nKurt Gödel\n\nA real abstract about bounds. It is fine.\n\n"
        "Optimization\n\nGrace Hopper 等\n",
    )
    items = list(records_of(path))
    assert [type(item) for item in items] == [BadRecord, Record, BadRecord]
    assert items[0].reason == "label block 'Deep Learning · X' has no abstract"
    assert (items[0].line, items[0].kind, items[0].source) == (3, "invalid", str(path))
    assert items[1].label == "Theory"
    assert items[2].reason == "label block 'Optimization' has no abstract" and items[2].line == 13
    with pytest.raises(IngestError, match=r"missing\.txt:3: label block 'Deep Learning · X' has no abstract"):
        load_dataset(path)


def test_text_labeled_invalid_label_and_orphan_paragraph(tmp_path):
    path = write(
        tmp_path / "weird.txt",
        "Search results\n\nThis paragraph comes before any label. It cannot be attributed.\n\n"
        "Deep Learning ->\n\nAda Lovelace\n\nAn abstract with a broken label line. It is long enough.\n\n"
        "Theory\n\nKurt Gödel\n\nAn abstract. Fine.\n",
    )
    orphan, invalid, good = records_of(path)
    assert isinstance(orphan, BadRecord) and orphan.line == 3 and "label" in orphan.reason
    assert isinstance(invalid, BadRecord) and invalid.line == 5
    assert invalid.reason.startswith("invalid label 'Deep Learning ->'")
    assert good.label == "Theory"


def test_text_unlabeled_layout(tmp_path):
    path = write(
        tmp_path / "abstracts.txt",
        "ICLR 2024 Papers\n\n"
        f"{ABSTRACT_A}\n\n\n"
        "Graph neural networks struggle with\nlong-range dependencies.   \nWe add virtual nodes.\n\n"
        f"{ABSTRACT_C}\n",
    )
    assert detect_format(path) == "text-unlabeled"
    items = list(records_of(path))
    assert [item.abstract for item in items] == [ABSTRACT_A, ABSTRACT_B, ABSTRACT_C]
    assert [item.line for item in items] == [3, 6, 10]
    assert all(item.label is None and item.title is None for item in items)
    assert items[0].id == make_id(ABSTRACT_A)


def test_text_unlabeled_first_paragraph_is_kept_when_it_is_prose(tmp_path):
    path = write(tmp_path / "no_header.txt", f"Short prose. Really.\n\n{ABSTRACT_A}\n")
    assert [item.abstract for item in records_of(path)] == ["Short prose. Really.", ABSTRACT_A]


def test_text_unlabeled_records_are_bad_when_labels_are_required(tmp_path):
    path = write(tmp_path / "abstracts.txt", f"ICLR 2024 Papers\n\n{ABSTRACT_A}\n")
    (item,) = records_of(path, labeled=True)
    assert isinstance(item, BadRecord) and item.kind == "invalid" and "no label" in item.reason


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


# --------------------------------------------------------------------------- encodings, line endings, gzip


def test_crlf_bom_trailing_spaces_and_wrapped_abstracts(tmp_path):
    text_path = write(
        tmp_path / "crlf.txt",
        "\ufeff论文检索  \r\n\r\nTheory · Learning Theory   \r\n  \r\n"
        "Ada Lovelace, Alan Turing 等 \r\n\r\n"
        "First wrapped line   \r\nsecond line.\r\n",
    )
    (record,) = records_of(text_path)
    assert record.label == "Theory · Learning Theory"
    assert record.abstract == "First wrapped line second line."
    assert record.line == 3

    jsonl_path = write(
        tmp_path / "crlf.jsonl",
        '\ufeff{"abstract": "Wrapped\\r\\n  abstract  ", "label": "Theory"}   \r\n\r\n'
        '{"abstract": "Second.", "label": "Theory"}\r\n',
    )
    first, second = records_of(jsonl_path)
    assert (first.abstract, first.line, second.line) == ("Wrapped abstract", 1, 3)

    csv_path = write(tmp_path / "crlf.csv", '\ufeffabstract,label\r\n"Wrapped\r\nline",Theory\r\nNext.,Theory\r\n')
    first, second = records_of(csv_path)
    assert (first.abstract, second.abstract, second.line) == ("Wrapped line", "Next.", 4)


def test_latex_and_markdown_are_kept_as_is(tmp_path):
    abstract = r"We bound $\|x\|_2 \leq \sqrt{d}\,\epsilon$ with **strong** _guarantees_ and `code` [link](http://a.b)."
    path = write(tmp_path / "latex.jsonl", jsonl({"abstract": abstract}))
    (record,) = records_of(path)
    assert record.abstract == abstract


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        ("p.jsonl", jsonl({"abstract": ABSTRACT_A, "label": "Theory"}), "jsonl"),
        ("p.json", json.dumps([{"abstract": ABSTRACT_A, "label": "Theory"}]), "json"),
        ("p.csv", f"abstract,label\n{ABSTRACT_A},Theory\n", "csv"),
        ("p.txt", f"Header\n\nTheory\n\nAda Lovelace 等\n\n{ABSTRACT_A}\n", "text-labeled"),
        ("p.txt", f"ICLR 2024 Papers\n\n{ABSTRACT_A}\n", "text-unlabeled"),
    ],
)
def test_every_format_reads_the_same_when_gzipped(tmp_path, name, content, fmt):
    plain = write(tmp_path / name, content)
    packed = write(tmp_path / f"{name}.gz", content, compress=True)
    sniffed = write(tmp_path / f"{name}.bin", content, compress=True)  # gzip found by magic bytes
    assert detect_format(plain) == detect_format(packed) == fmt
    expected = [(r.abstract, r.label, r.line) for r in records_of(plain)]
    assert expected and expected[0][0] == ABSTRACT_A
    assert [(r.abstract, r.label, r.line) for r in records_of(packed)] == expected
    assert [(r.abstract, r.label, r.line) for r in records_of(sniffed, fmt)] == expected


@pytest.mark.parametrize("compress", [False, True])
def test_non_utf8_bytes_are_fatal_with_their_line_number(tmp_path, compress):
    data = jsonl({"abstract": ABSTRACT_A}, {"abstract": ABSTRACT_B}).encode() + b'{"abstract": "caf\xe9"}\n'
    path = tmp_path / ("latin1.jsonl.gz" if compress else "latin1.jsonl")
    path.write_bytes(gzip.compress(data) if compress else data)
    with pytest.raises(IngestError) as caught:
        list(records_of(path))
    assert caught.value.line == 3 and caught.value.path == str(path)
    assert str(caught.value).startswith(f"{path}:3: not valid UTF-8 (byte 0xe9")


def test_non_utf8_bytes_in_a_text_dump_are_reported_by_line(tmp_path):
    path = tmp_path / "dump.txt"
    path.write_bytes(b"ICLR 2024 Papers\n\nFine abstract. Yes.\n\nBad \xff\xfe abstract.\n")
    with pytest.raises(IngestError, match=r"dump\.txt:5: not valid UTF-8"):
        list(records_of(path))


def test_truncated_gzip_is_fatal(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(jsonl({"abstract": ABSTRACT_A}).encode() * 50)[:40])
    with pytest.raises(IngestError, match="cannot read file"):
        list(records_of(path))


# --------------------------------------------------------------------------- format detection and fatal errors


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("a.jsonl", jsonl({"abstract": "x"}), "jsonl"),
        ("a.NDJSON", jsonl({"abstract": "x"}), "jsonl"),
        ("a.json", json.dumps([{"abstract": "x"}]), "json"),
        ("a.json", jsonl({"abstract": "x"}, {"abstract": "y"}), "jsonl"),
        ("a.csv", "abstract\nx\n", "csv"),
        ("a.txt", "  \n" + json.dumps([{"abstract": "x"}]), "json"),
        ("a.dat", jsonl({"abstract": "x"}), "jsonl"),
        ("noext", "Theory\n\nAda Lovelace, Alan Turing\n\nAbstract.\n", "text-labeled"),
        ("a.text", "Papers\n\nDeep Learning · Not a label here, this paragraph is prose. Truly.\n", "text-unlabeled"),
    ],
)
def test_detect_format_by_extension_and_content(tmp_path, name, content, expected):
    assert detect_format(write(tmp_path / name, content)) == expected


def test_detect_format_override_wins_and_is_validated(tmp_path):
    path = write(tmp_path / "papers.txt", f"ICLR 2024 Papers\n\n{ABSTRACT_A}\n")
    assert detect_format(path, override="text-labeled") == "text-labeled"
    assert set(FORMATS) == {"jsonl", "json", "csv", "text-labeled", "text-unlabeled"}
    with pytest.raises(IngestError, match="unknown format 'xml'"):
        detect_format(path, override="xml")
    with pytest.raises(IngestError, match="unknown format 'xml'"):
        list(records_of(path, "xml"))


@pytest.mark.parametrize("content", [b"", b"   \n\r\n\t\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf  \r\n"])
@pytest.mark.parametrize("name", ["empty.jsonl", "empty.txt", "empty.csv"])
def test_empty_files_are_fatal(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(IngestError, match=r"file is empty") as caught:
        detect_format(path)
    assert caught.value.line is None and str(caught.value) == f"{path}: file is empty"
    with pytest.raises(IngestError, match="file is empty"):
        list(records_of(path, "jsonl"))  # also when the format is given


def test_empty_gzip_file_is_fatal(tmp_path):
    path = write(tmp_path / "empty.jsonl.gz", "\n", compress=True)
    with pytest.raises(IngestError, match="file is empty"):
        list(records_of(path))


def test_missing_file_is_fatal(tmp_path):
    path = tmp_path / "nope.jsonl"
    with pytest.raises(IngestError, match="file not found") as caught:
        detect_format(path)
    assert caught.value.path == str(path)
    with pytest.raises(IngestError, match="file not found"):
        list(records_of(path, "jsonl"))
    with pytest.raises(IngestError, match="file not found"):
        load_dataset([path])


def test_binary_content_cannot_be_classified(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\x00\x01\x02abc\x00")
    with pytest.raises(IngestError, match="cannot detect the format"):
        detect_format(path)


# --------------------------------------------------------------------------- load_dataset


def test_load_dataset_counts_duplicates_and_empties_across_files(tmp_path):
    first = write(
        tmp_path / "a.jsonl",
        jsonl(
            {"id": "a1", "abstract": ABSTRACT_A, "label": "Theory"},
            {"id": "a2", "abstract": "  ", "label": "Theory"},
            {"id": "a3", "abstract": ABSTRACT_B, "label": "Deep Learning · Graph Neural Networks"},
            {"id": "a4", "abstract": ABSTRACT_A.upper(), "label": "Theory"},  # same key, same label
        ),
    )
    second = write(
        tmp_path / "b.csv",
        "abstract,label\n"
        f'"{ABSTRACT_B}\n",Deep Learning -> Transformers\n'  # duplicate, different label
        f"{ABSTRACT_C},Deep Learning · Graph Neural Networks\n",
    )
    kept, summary = load_dataset([first, second])
    assert [r.id for r in kept] == ["a1", "a3", make_id(ABSTRACT_C)]
    assert isinstance(summary, LoadSummary)
    assert (summary.read, summary.kept, summary.duplicates, summary.conflicting_duplicates, summary.empty) == (
        6,
        3,
        2,
        1,
        1,
    )
    assert summary.files == [str(first), str(second)] and summary.formats == ["jsonl", "csv"]
    assert summary.label_counts == {"Deep Learning · Graph Neural Networks": 2, "Theory": 1}
    assert summary.lines() == [
        "read 6 records from 2 files (jsonl, csv)",
        "kept 3",
        "skipped 2 duplicates (1 with a different label)",
        "skipped 1 empty abstract",
        "2 distinct labels",
    ]


def test_load_dataset_raises_on_invalid_records(tmp_path):
    path = write(
        tmp_path / "bad.jsonl",
        jsonl({"abstract": ABSTRACT_A, "label": "Theory"}) + "\n" + '{"abstract": "x", "label": Theory}\n',
    )
    with pytest.raises(IngestError) as caught:
        load_dataset(path)
    assert (caught.value.path, caught.value.line) == (str(path), 3)
    assert str(caught.value).startswith(f"{path}:3: invalid JSON: Expecting value")


def test_load_dataset_requires_labels_by_default(tmp_path):
    path = write(tmp_path / "p.jsonl", jsonl({"abstract": ABSTRACT_A, "label": "Theory"}, {"abstract": ABSTRACT_B}))
    with pytest.raises(IngestError, match=r"p\.jsonl:2: no label"):
        load_dataset(path)
    kept, summary = load_dataset(path, labeled=False)
    assert len(kept) == 2 and summary.label_counts == {}


# --------------------------------------------------------------------------- the real samples


def test_real_labeled_dump():
    path = shared_file("samples/labeled_dump.txt")
    label_lines = path.read_text(encoding="utf-8").split("\n\n")[1::3]
    assert detect_format(path) == "text-labeled"
    items = list(records_of(path, labeled=True))
    assert len(items) == 40 and all(isinstance(item, Record) for item in items)
    assert [item.label for item in items] == label_lines
    assert items[0].label == "Deep Learning · Large Language Models"
    assert items[0].abstract.startswith("We present a scalable method")
    assert items[0].line == 3
    assert len({item.id for item in items}) == 40


def test_et_al_marker_never_leaks_into_records(tmp_path):
    real = SHARED / "samples" / "labeled_dump.txt"
    sources = [write(tmp_path / "dump.txt", LABELED_TEXT)] + ([real] if real.exists() else [])
    for path in sources:
        assert "等" in path.read_text(encoding="utf-8")
        for item in records_of(path):
            assert isinstance(item, Record)
            values = [getattr(item, f.name) for f in fields(item)]
            assert not any("等" in value for value in values if isinstance(value, str)), item


def test_real_unlabeled_dump():
    path = shared_file("samples/unlabeled_dump.txt")
    assert detect_format(path) == "text-unlabeled"
    items = list(records_of(path))
    assert len(items) == 30 and all(isinstance(item, Record) for item in items)
    assert all(item.label is None for item in items)
    assert items[0].line == 3 and items[0].abstract.startswith("Brain simulation builds dynamical models")
    assert not any(item.abstract.startswith("ICLR 2024 Papers") for item in items)


def test_real_iclr_topics_load_dataset():
    path = shared_file("iclr2024_topics.jsonl")
    kept, summary = load_dataset(path)
    assert len(kept) == summary.kept == summary.read == 1996
    assert (summary.duplicates, summary.empty) == (0, 0)
    assert len(summary.label_counts) == 85
    assert {r.area for r in kept} == set(KNOWN_AREAS) - {"General Machine Learning", "Position"}  # ICML 2025's
    assert sum(1 for r in kept if r.subarea is None) == 116
    assert summary.label_counts["Deep Learning · Large Language Models"] == 266
    assert summary.lines()[:2] == ["read 1,996 records from 1 file (jsonl)", "kept 1,996"]
    with path.open(encoding="utf-8") as raw:
        first = json.loads(raw.readline())
    assert (kept[0].id, kept[0].label, kept[0].title) == (first["id"], first["label"], first["title"])


# --------------------------------------------------------------------------- hostile input (issue 13)


def test_deeply_nested_jsonl_line_is_one_bad_record_not_a_crash(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    path = write(
        tmp_path / "deep.jsonl",
        jsonl({"abstract": ABSTRACT_A}) + '{"abstract": ' + deep + "}\n" + jsonl({"abstract": ABSTRACT_B}),
    )
    first, bad, last = iter_records(path)
    assert isinstance(bad, BadRecord) and bad.line == 2 and "nested too deeply" in bad.reason
    assert (first.abstract, last.abstract) == (ABSTRACT_A, ABSTRACT_B)


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


@pytest.mark.parametrize("abstract", ["\u0000", "\u200b\u200b", "\U0001f600\U0001f680", "… — !!"])
def test_content_free_abstracts_are_empty_records(tmp_path, abstract):
    path = write(tmp_path / "cf.jsonl", jsonl({"id": "x", "abstract": abstract}, {"abstract": ABSTRACT_A}))
    bad, good = iter_records(path)
    assert isinstance(bad, BadRecord) and bad.kind == "empty" and "no letters or digits" in bad.reason
    assert good.abstract == ABSTRACT_A


def test_text_dump_header_is_reported_not_dropped(tmp_path):
    path = write(tmp_path / "abstracts.txt", f"We study graphs\n\n{ABSTRACT_A}\n\n{ABSTRACT_B}\n")
    header, *rest = iter_records(path)
    assert isinstance(header, BadRecord) and header.kind == "header" and header.line == 1
    assert "We study graphs" in header.reason and [r.abstract for r in rest] == [ABSTRACT_A, ABSTRACT_B]
    records, summary = load_dataset(path, labeled=False)
    assert len(records) == 2 and summary.headers == 1 and "skipped 1 header paragraph" in summary.lines()


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


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "papers.xlsx",
            b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00\x86[Content_Types].xml",
            "export the sheet as CSV",
        ),
        (
            "papers",
            b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00\x86[Content_Types].xml",
            "export the sheet as CSV",
        ),
        ("papers.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x00\x86", "export the sheet as CSV"),
        ("papers.zip", b"PK\x03\x04\x14\x00\x00\x00\x08\x00abc.txt", "a ZIP archive, not text: unzip it"),
        ("paper.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "a PDF, not text: paste the abstract (not the whole paper)"),
    ],
)
def test_a_spreadsheet_archive_or_pdf_is_named_with_what_to_give_instead(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data + b"\n" + bytes(range(128, 256)))
    with pytest.raises(IngestError) as caught:
        list(iter_records(path))
    assert message in str(caught.value) and str(caught.value).startswith(f"{path}: ")
    assert "not valid UTF-8" not in str(caught.value)
