"""``iter_records``: every record of a file, in input order, by the reader of its layout."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from os import PathLike

from papertrack.features.ingest.csv_rows import read_csv
from papertrack.features.ingest.decoding import read_head
from papertrack.features.ingest.detection import check_format_name, classify
from papertrack.features.ingest.json_array import read_json_array
from papertrack.features.ingest.jsonl import read_jsonl
from papertrack.features.ingest.records import BadRecord, Record
from papertrack.features.ingest.text_labeled import read_text_labeled
from papertrack.features.ingest.text_unlabeled import read_text_unlabeled

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
