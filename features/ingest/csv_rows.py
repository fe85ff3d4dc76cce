"""The CSV reader: a header row naming at least an 'abstract' column (or the one ``--abstract-column`` names, see
:mod:`.columns`), then one record per row (quoted fields may span lines); blank rows are skipped. The delimiter —
comma, semicolon or tab — is detected from the header line (``csv.Sniffer`` restricted to those three; a comma
when it cannot tell). A line over ``InputLimits.max_line`` or a row over ``max_record`` is fatal: past it the
quoting cannot be followed."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from os import PathLike

from papertrack.features.ingest.columns import missing_columns, missing_message
from papertrack.features.ingest.decoding import LongLine, limits, read_lines, size_text
from papertrack.features.ingest.records import BadRecord, IngestError, Record, display_name, record_from_mapping

# A CSV field may hold a whole (long) abstract: the csv module's default limit (131,072 characters)
# would abort the whole file at one long field. Over-long abstracts are reported per record instead.
csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))
DELIMITERS = ",;\t"  # what the header line is sniffed for


def sniff_delimiter(header_line: str) -> str:
    """The delimiter of a CSV file from its header line: comma, semicolon or tab (a comma when it cannot tell,
    e.g. one column)."""
    try:
        return csv.Sniffer().sniff(header_line, delimiters=DELIMITERS).delimiter
    except csv.Error:
        return ","


def _first_line(path: str | PathLike) -> str:
    """The first non-blank line (the header), for sniffing; over-long lines are left to the reader."""
    for _, text in read_lines(path):
        if isinstance(text, LongLine):
            return ""
        if text.strip():
            return text
    return ""


def read_header(path: str | PathLike) -> list[str]:
    """The normalised column names of a CSV file's header; ``IngestError`` when a needed column is missing."""
    for _, header in _rows(path):
        return header
    return []


def read_csv(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """CSV with a header row naming at least an 'abstract' column; blank lines are skipped."""
    source = display_name(path)
    columns: list[str] | None = None
    for start, row in _rows(path):
        if columns is None:
            columns = row
        elif len(row) != len(columns):
            yield BadRecord(source, start, f"row has {len(row)} fields but the header has {len(columns)}")
        else:
            yield record_from_mapping(dict(zip(columns, row)), source, start, labeled)


def _rows(path: str | PathLike) -> Iterator[tuple[int, list[str]]]:
    """(first line, fields) of every non-blank row; the header first, as checked normalised names."""
    cap = limits().max_record
    pending = 0  # characters read for the row being parsed

    def lines() -> Iterator[str]:
        nonlocal pending
        for lineno, text in read_lines(path):
            if isinstance(text, LongLine):
                raise IngestError(
                    path,
                    lineno,
                    f"line is {text.size:,} bytes, over the {size_text(limits().max_line)} "
                    f"limit of one line (a CSV file cannot be read past it)",
                )
            pending += len(text) + 1
            if pending > cap:
                raise IngestError(
                    path,
                    start,
                    f"the record starting here is over {cap:,} characters (the limit"
                    f" of one record; a quote left open?)",
                )
            yield text + "\n"

    reader = csv.reader(lines(), delimiter=sniff_delimiter(_first_line(path)))
    header = True
    while True:
        start = reader.line_num + 1
        pending = 0
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise IngestError(path, reader.line_num, f"malformed CSV: {exc}") from None
        if not any(cell.strip() for cell in row):
            continue
        if header:
            header = False
            yield start, _csv_columns(path, start, row)
        else:
            yield start, row


def _csv_columns(path: str | PathLike, line: int, header: list[str]) -> list[str]:
    """Normalised column names; raises ``IngestError`` when a needed column (the abstract's) is missing."""
    missing = missing_columns(header)
    if missing:
        raise IngestError(path, line, missing_message(header, missing))
    return [name.strip().lower() for name in header]
