"""Read paper abstracts (and optional "Area · Subarea" labels) from the input layouts we accept.

Layouts (``FORMATS``): JSON lines, a JSON array, CSV, and two plain-text layouts pasted from
paper-search pages ("text-labeled": label / authors / abstract blocks, "text-unlabeled": one
abstract per paragraph).  Every layout may be gzip-compressed, start with a UTF-8 BOM and use CRLF.

``iter_records`` streams one ``Record`` or ``BadRecord`` per record found, in input order.
Problems with a single record become a ``BadRecord``; problems with the whole file raise
``IngestError`` (always with the path, and the line when there is one). The strict reader for
training (invalid records fatal, empty abstracts and duplicates counted) is
:func:`papertrack.training.dataset.load_dataset`.

Hostile text: a record whose used fields hold a lone surrogate escape is a ``BadRecord`` naming the
field; a UTF-16/UTF-32 file is an ``IngestError`` saying how to convert it. Standard input is read from
a copy that rows and messages name ``<stdin>`` (:func:`display_name`, :func:`expand_stdin`).

The modules: :mod:`.records` (Record, BadRecord, IngestError, ids and normalisation, the field rules of JSON
objects and CSV rows), :mod:`.decoding` (gzip, size cap, UTF-8/UTF-16 detection, ``InputLimits``) and one module
per layout: :mod:`.jsonl`, :mod:`.json_array`, :mod:`.csv_rows`, :mod:`.text_labeled`, :mod:`.text_unlabeled`
(the text layouts' paragraphs in :mod:`.text_blocks`); OpenReview notes and dotted paths in :mod:`.notes`. This
module: which layout a file uses (``detect_format``: the extension first, ".gz" looked through, then its first lines
— '[' starts a JSON array, and so does an object whose first field is ``"notes"`` (an OpenReview export), '{' JSON
lines (a pretty-printed object is read as JSON and told apart by its reader), other text is one of the two text
layouts), ``iter_records`` (the file read by its layout's reader) and ``-`` as an
input (standard input, copied to a temporary file first: every reader of an input opens it more than once —
format detection, then the records, the labeler's progress total — so a pipe is copied once to a private
temporary file by :mod:`.stdin_copy`: at most ``PAPERTRACK_MAX_INPUT_BYTES``, removed when the process exits or
gets SIGTERM); a gzip stream is recognised by its magic bytes and the format from the content, because there is
no file name: ``--format csv`` for CSV).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from os import PathLike
from pathlib import Path

from papertrack.errors import UsageError
from papertrack.features.ingest.csv_rows import read_csv
from papertrack.features.ingest.decoding import InputLimits, LongLine, input_limits, limits, open_input, read_head
from papertrack.features.ingest.json_array import read_json_array
from papertrack.features.ingest.jsonl import json_line_record, read_jsonl
from papertrack.features.ingest.records import (
    STDIN_NAME,
    SUGGESTED_FIELD,
    SUGGESTED_MARKER,
    BadRecord,
    IngestError,
    Record,
    abstract_key,
    display_name,
    has_content,
    make_id,
    make_record,
    name_input,
    normalise_text,
    record_from_mapping,
)
from papertrack.features.ingest.stdin_copy import copy_stdin
from papertrack.features.ingest.text_blocks import is_label_line, iter_blocks, looks_like_authors
from papertrack.features.ingest.text_labeled import read_text_labeled
from papertrack.features.ingest.text_unlabeled import read_text_unlabeled

__all__ = [
    "FORMATS",
    "STDIN_NAME",
    "SUGGESTED_FIELD",
    "SUGGESTED_MARKER",
    "BadRecord",
    "IngestError",
    "InputLimits",
    "Record",
    "abstract_key",
    "detect_format",
    "expand_stdin",
    "display_name",
    "has_content",
    "input_limits",
    "is_stdin",
    "iter_records",
    "json_line_record",
    "limits",
    "make_id",
    "make_record",
    "name_input",
    "normalise_text",
    "open_input",
    "record_from_mapping",
]

FORMATS = ("jsonl", "json", "csv", "text-labeled", "text-unlabeled")
_DETECT_BLOCKS = 6  # how many leading text blocks may hold the first label line


def detect_format(path: str | PathLike, override: str | None = None) -> str:
    """Tell which of ``FORMATS`` a file uses; ``override`` (if given) wins.

    Otherwise the extension decides (".gz" ignored): .jsonl/.ndjson, .json (a JSON array, or
    JSON lines despite the name), .csv.  Anything else is sniffed: '[' starts a JSON array,
    '{' JSON lines, and other text is one of the two text layouts.
    """
    if override is not None:
        return check_format_name(path, override)
    return classify(path, read_head(path))


def check_format_name(path: str | PathLike, fmt: str) -> str:
    """``fmt`` itself when it is one of ``FORMATS``, else ``IngestError``."""
    if fmt not in FORMATS:
        raise IngestError(path, None, f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    return fmt


def _extension(path: str | PathLike) -> str:
    """The lower-case extension, looking through a trailing ".gz"."""
    name = Path(path).name.lower().removesuffix(".gz")
    return Path(name).suffix


def classify(path: str | PathLike, head: list[str]) -> str:
    """The format of a file, from its extension and then from its first lines."""
    ext = _extension(path)
    if ext in (".jsonl", ".ndjson"):
        return "jsonl"
    if ext in (".csv", ".tsv"):
        return "csv"
    text = "\n".join(head).lstrip()
    if text.startswith("["):
        return "json"
    if text.startswith("{") or ext == ".json":
        if _RECORDS_OBJECT.match(text):
            return "json"  # an OpenReview export: {"notes": [...]}, read by the JSON-array reader
        if ext == ".json" and text.startswith("{") and len([line for line in head if line.strip()]) == 1:
            return "json"  # one JSON object: a document, not JSON lines
        if _looks_like_json_lines(text) or any(
            isinstance(line, LongLine) and line.lstrip().startswith("{") for line in head[:1]
        ):
            return "jsonl"
        if text.startswith("{"):
            return "json"  # a pretty-printed object: its reader tells whether it holds a "notes" array
        raise IngestError(path, None, "neither a JSON array nor JSON lines (one object per line)")
    if "\x00" in text:
        raise IngestError(path, None, "cannot detect the format: the content looks binary")
    return _classify_text(head)


_RECORDS_OBJECT = re.compile(r'\{\s*"notes"\s*:\s*\[')  # an object whose first field is the records' array


def _looks_like_json_lines(text: str) -> bool:
    """True when the first line holds one whole JSON object (``{...}``)."""
    first = text.split("\n", 1)[0].strip()
    return first.startswith("{") and first.endswith("}")


def _classify_text(head: list[str]) -> str:
    """Return "text-labeled" when one of the first blocks is a label line followed by authors, or a label
    line under comment lines (as ``papertrack suggest`` writes it, authors or not)."""
    blocks = list(iter_blocks(enumerate(head, start=1), comments=True))[: _DETECT_BLOCKS + 1]
    for block, following in zip(blocks, blocks[1:]):
        if is_label_line(block) and (looks_like_authors(following.text) or block.comments):
            return "text-labeled"
    return "text-unlabeled"


# ----------------------------------------------------------------- reading a file by its layout

_READERS: dict[str, Callable[[str | PathLike, bool | None], Iterator[Record | BadRecord]]] = {
    "jsonl": read_jsonl,
    "json": read_json_array,
    "csv": read_csv,
    "text-labeled": read_text_labeled,
    "text-unlabeled": read_text_unlabeled,
}


def iter_records(
    path: str | PathLike, fmt: str | None = None, *, labeled: bool | None = None
) -> Iterator[Record | BadRecord]:
    """Iterate over every record of ``path`` in input order, unusable ones as ``BadRecord``.

    ``fmt`` is one of ``FORMATS`` (detected when None).  ``labeled=True``: a record without a
    label is a ``BadRecord``; ``None``: labels are optional; ``False``: labels are ignored.
    A missing or empty file, an unknown format or an undetectable layout raise ``IngestError``
    at the call; problems found further into the file raise it while iterating.
    """
    head = read_head(path)
    fmt = check_format_name(path, fmt) if fmt is not None else classify(path, head)
    return _READERS[fmt](path, labeled)


# ----------------------------------------------------------------- standard input

STDIN_ARGUMENT = "-"


def is_stdin(path: str | Path) -> bool:
    return str(path) == STDIN_ARGUMENT


def expand_stdin(paths: Sequence[Path], stream=None) -> list[Path]:
    """``paths`` with ``-`` replaced by a copy of standard input (``stream``: the bytes to read, for tests)."""
    paths = [Path(p) for p in paths]
    if sum(is_stdin(p) for p in paths) > 1:
        raise UsageError("'-' (standard input) is given more than once; it can be read only once")
    return [copy_stdin(stream) if is_stdin(p) else p for p in paths]
