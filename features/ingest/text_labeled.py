"""The "text-labeled" reader: dumps pasted from paper-search pages, each paper a label line ("Area · Subarea"),
an optional authors paragraph, then its abstract (one or more paragraphs). A line starting with ``#`` and a
space is a comment; ``# model-suggested: <label>`` above a label line records the model's guess."""

from __future__ import annotations

from collections.abc import Iterator
from os import PathLike

from papertrack.features.ingest.decoding import read_lines
from papertrack.features.ingest.records import SUGGESTED_MARKER, BadRecord, Record, display_name, make_record
from papertrack.features.ingest.text_blocks import (
    AUTHORS_MARKER,
    Block,
    header_record,
    is_label_line,
    iter_blocks,
    looks_like_authors,
    too_long_block,
)


def read_text_labeled(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """Label line, optional authors block, then the abstract (one or more paragraphs); ``#`` comments."""
    source = display_name(path)
    blocks = iter_blocks(read_lines(path), comments=True)
    block = next(blocks, None)
    if block is not None and not block.too_long and not is_label_line(block):
        yield header_record(source, block)
        block = next(blocks, None)
    while block is not None:
        if block.too_long:
            yield too_long_block(source, block)
            block = next(blocks, None)
            continue
        if not is_label_line(block):
            yield BadRecord(source, block.line, "text block is not preceded by a label line")
            block = next(blocks, None)
            continue
        body, following = _take_until_label(blocks)
        yield _labeled_text_record(source, block, body, labeled)
        block = following


def _take_until_label(blocks: Iterator[Block]) -> tuple[list[Block], Block | None]:
    """The blocks up to the next label line, and that label line (None at the end)."""
    body: list[Block] = []
    for block in blocks:
        if is_label_line(block):
            return body, block
        body.append(block)
    return body, None


def _labeled_text_record(source: str, label: Block, body: list[Block], labeled: bool | None) -> Record | BadRecord:
    """The record for one label line and the blocks after it (the authors block kept apart)."""
    authors = None
    if body and looks_like_authors(body[0].text):
        # the et-al marker ("等" or "et al.") is kept, in one spelling: "et al."
        authors = AUTHORS_MARKER.sub(" et al.", body[0].text) if AUTHORS_MARKER.search(body[0].text) else body[0].text
        body = body[1:]
    if not body:
        return BadRecord(source, label.line, f"label block {label.text!r} has no abstract")
    if too_long := next((block for block in body if block.too_long), None):
        return too_long_block(source, too_long)
    abstract = " ".join(block.text for block in body)
    guesses = [c[len(SUGGESTED_MARKER) :].strip() for c in label.comments if c.startswith(SUGGESTED_MARKER)]
    return make_record(
        source,
        label.line,
        abstract,
        labeled=labeled,
        label=label.text,
        authors=authors,
        guess=guesses[-1] if guesses else None,
    )
