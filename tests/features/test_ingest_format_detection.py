"""Tests for papertrack.features.ingest: the format of a file (by extension and content, or given) and the
errors that stop a file (empty, missing, binary, a spreadsheet, an archive or a PDF), each naming the file."""

from __future__ import annotations

import json

import pytest

from papertrack.features.ingest import FORMATS, IngestError, detect_format, iter_records
from papertrack.training.dataset import load_dataset
from tests.features.ingest_inputs import ABSTRACT_A, jsonl, records_of, write


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


# --------------------------------------------------------------------------- fatal errors


def test_ingest_error_message_names_path_and_line():
    error = IngestError("data/x.jsonl", 7, "invalid JSON")
    assert (error.path, error.line, error.message) == ("data/x.jsonl", 7, "invalid JSON")
    assert str(error) == "data/x.jsonl:7: invalid JSON"
    assert str(IngestError("data/x.jsonl", None, "file is empty")) == "data/x.jsonl: file is empty"


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
