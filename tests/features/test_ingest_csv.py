"""Tests for papertrack.features.ingest: CSV (headers, quoting, multi-line fields, area and subarea columns, a
missing abstract column, a field over the csv module's default limit)."""

from __future__ import annotations

import pytest

from papertrack.features.ingest import BadRecord, IngestError, Record, detect_format, iter_records
from tests.features.ingest_inputs import ABSTRACT_A, ABSTRACT_B, ABSTRACT_C, records_of, write


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
