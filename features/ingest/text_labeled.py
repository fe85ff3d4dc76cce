"""The "text-labeled" reader: dumps pasted from paper-search pages, each paper a label line ("Area · Subarea"),
an optional authors paragraph, then its abstract (one or more paragraphs). A line starting with ``#`` and a
space is a comment; ``# model-suggested: <label>`` above a label line records the model's guess."""

from __future__ import annotations

from collections.abc import Iterator
from os import PathLike
from typing import NamedTuple

from papertrack.features.ingest.decoding import limits, read_lines
from papertrack.features.ingest.records import SUGGESTED_MARKER, BadRecord, Record, display_name, make_record
from papertrack.features.ingest.text_blocks import (
    Block,
    header_record,
    is_label_line,
    iter_blocks,
    looks_like_authors,
    split_et_al,
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
        body = _take_until_label(blocks)
        if body.oversized is not None:
            yield too_long_block(source, body.oversized)
        elif body.too_long:
            yield _too_long_record(source, block, body.too_long)
        else:
            yield _labeled_text_record(source, block, body.blocks, labeled)
        block = body.following


class _Body(NamedTuple):
    """What follows a label line: its blocks (none when too long), the next label line (None at the end), and
    when the blocks together pass ``InputLimits.max_record`` characters their size (else 0) and the first
    block that is over the limit by itself (if one is)."""

    blocks: list[Block]
    following: Block | None
    too_long: int = 0
    oversized: Block | None = None


def _take_until_label(blocks: Iterator[Block]) -> _Body:
    """The blocks up to the next label line. Once they pass ``InputLimits.max_record`` characters together
    they are read to the next label line and dropped as they come, so one record never holds more than the
    limit (300,000 paragraphs of 1 KB under one label line took 5 GB; hostile input, round three)."""
    cap = limits().max_record
    body: list[Block] = []
    size = 0
    oversized = None
    for block in blocks:
        if is_label_line(block):
            return _Body(body, block, size if size > cap else 0, oversized)
        size += block.too_long or len(block.text) + 1
        oversized = oversized or (block if block.too_long else None)
        if size > cap:
            body = []
        else:
            body.append(block)
    return _Body(body, None, size if size > cap else 0, oversized)


def _too_long_record(source: str, label: Block, size: int) -> BadRecord:
    return BadRecord(
        source,
        label.line,
        f"the paragraphs under label line {label.text[:60]!r} are {size:,} characters or more, over the "
        f"{limits().max_record:,}-character limit of one record (not read)",
        kind="too-long",
    )


def _labeled_text_record(source: str, label: Block, body: list[Block], labeled: bool | None) -> Record | BadRecord:
    """The record for one label line and the blocks after it (the authors block kept apart)."""
    authors = None
    if body and looks_like_authors(body[0].text):
        # the et-al marker ("等" or "et al.") is kept, in one spelling: "et al."
        names, et_al = split_et_al(body[0].text)
        authors = names + " et al." if et_al else body[0].text
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
