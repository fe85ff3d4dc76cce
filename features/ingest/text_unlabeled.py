"""The "text-unlabeled" reader: one abstract per paragraph, after an optional short header line."""

from __future__ import annotations

from collections.abc import Iterator
from os import PathLike

from papertrack.features.ingest.decoding import read_lines
from papertrack.features.ingest.records import BadRecord, Record, display_name, make_record
from papertrack.features.ingest.text_blocks import header_record, iter_blocks, looks_like_header, too_long_block


def read_text_unlabeled(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """One abstract per paragraph, after an optional short header line."""
    source = display_name(path)
    for index, block in enumerate(iter_blocks(read_lines(path))):
        if block.too_long:
            yield too_long_block(source, block)
            continue
        if index == 0 and looks_like_header(block.text):
            yield header_record(source, block)
            continue
        yield make_record(
            source, block.line, block.text, labeled=labeled, missing_label="no label (unlabeled text layout)"
        )
