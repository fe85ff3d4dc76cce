"""The CSV reader: a header row naming at least an 'abstract' column, then one record per row (quoted fields
may span lines); blank rows are skipped. A line over ``InputLimits.max_line`` or a row over ``max_record``
is fatal: past it the quoting cannot be followed."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from os import PathLike

from papertrack.features.ingest.decoding import LongLine, limits, read_lines, size_text
from papertrack.features.ingest.records import BadRecord, IngestError, Record, display_name, record_from_mapping

# A CSV field may hold a whole (long) abstract: the csv module's default limit (131,072 characters)
# would abort the whole file at one long field. Over-long abstracts are reported per record instead.
csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))


def read_csv(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """CSV with a header row naming at least an 'abstract' column; blank lines are skipped."""
    source = display_name(path)
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

    reader = csv.reader(lines())
    columns: list[str] | None = None
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
        if columns is None:
            columns = _csv_columns(path, start, row)
        elif len(row) != len(columns):
            yield BadRecord(source, start, f"row has {len(row)} fields but the header has {len(columns)}")
        else:
            yield record_from_mapping(dict(zip(columns, row)), source, start, labeled)


def _csv_columns(path: str | PathLike, line: int, header: list[str]) -> list[str]:
    """Normalised column names; raises ``IngestError`` when there is no 'abstract' column."""
    columns = [name.strip().lower() for name in header]
    if "abstract" not in columns:
        raise IngestError(path, line, f"CSV has no 'abstract' column (columns: {', '.join(header)})")
    return columns
