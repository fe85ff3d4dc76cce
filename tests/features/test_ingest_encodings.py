"""Tests for papertrack.features.ingest: encodings, line endings and gzip (CRLF, byte order marks, every format
gzipped, bytes that are not UTF-8, a truncated gzip file), and LaTeX or Markdown kept as written."""

from __future__ import annotations

import gzip
import json

import pytest

from papertrack.features.ingest import IngestError, detect_format
from tests.features.ingest_inputs import ABSTRACT_A, ABSTRACT_B, jsonl, records_of, write


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
