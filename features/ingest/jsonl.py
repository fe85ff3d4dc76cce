"""The JSON-lines reader: one JSON object per line; blank lines are skipped, a broken or over-long line is one
``BadRecord``. :func:`json_line_record` is also what the Spark engine runs on each line it split itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from os import PathLike

from papertrack.features.ingest.decoding import UTF8_BOM, LongLine, decode_line, limits, read_lines, size_text
from papertrack.features.ingest.records import TOO_DEEP, BadRecord, IngestError, Record, display_name, record_from_value


def read_jsonl(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """One JSON object per line; blank lines are skipped, broken lines become ``BadRecord``."""
    source = display_name(path)
    for lineno, text in read_lines(path):
        if isinstance(text, LongLine):
            yield too_long_line(source, lineno, text.size)
            continue
        item = json_line_record(text, source, lineno, labeled)
        if item is not None:
            yield item


def too_long_line(source: str, line: int, size: int) -> BadRecord:
    cap = limits().max_line
    return BadRecord(
        source,
        line,
        f"line is {size:,} bytes, over the {size_text(cap)} limit of one line "
        "(not read; is the file one record per line?)",
        kind="too-long",
    )


def json_line_record(
    data: str | bytes, source: str, line: int, labeled: bool | None = None
) -> Record | BadRecord | None:
    """One line of a JSON-lines file as a record, None for a blank line.

    ``data`` is the text of the line, or its raw bytes when an engine splits the file itself (Spark):
    then a BOM on line 1 is dropped and a line that is not UTF-8 becomes a ``BadRecord``.
    """
    if isinstance(data, bytes):
        try:
            text = decode_line(source, line, data.removeprefix(UTF8_BOM) if line == 1 else data)
        except IngestError as exc:
            return BadRecord(source, line, exc.message)
        data = text.rstrip("\r\n")
    if not data.strip():
        return None
    try:
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        return BadRecord(source, line, f"invalid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return BadRecord(source, line, TOO_DEEP)
    except ValueError as exc:  # an integer of more than 4,300 digits (sys.set_int_max_str_digits)
        return BadRecord(source, line, f"invalid JSON: {exc}")
    return record_from_value(value, source, line, labeled)
