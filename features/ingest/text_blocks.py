"""What the two plain-text layouts share: paragraphs (runs of non-blank lines, ``#`` comments kept apart) and
the tests that tell a label line, an authors line and a dump's header paragraph — also used to detect
the labeled layout."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from papertrack.features.ingest.decoding import LongLine, limits
from papertrack.features.ingest.records import BadRecord
from papertrack.features.labels import KNOWN_AREAS, SEPARATORS

_SENTENCE_END = re.compile(r"[a-z]{2}[.!?](?:\s|$)")  # "works. We", not "E. Weston"
_MAX_LABEL_LINE = 200
_MAX_HEADER = 120
_MAX_AUTHOR_WORDS = 7
_MAX_AUTHOR_CHARS = 80
_COMMENT_LINE = re.compile(r"#(?:\s|$)")  # at column 0: "# note", not "#1 on the leaderboard"


class Block(NamedTuple):
    """A run of non-blank lines: where it starts, its lines joined by spaces, how many lines, and the
    comment lines just above it or inside it (only when comments are recognised)."""

    line: int
    text: str
    lines: int
    comments: tuple[str, ...] = ()
    too_long: int = 0  # a block over the limits: its size (its text is dropped), else 0


def iter_blocks(lines: Iterable[tuple[int, str]], comments: bool = False) -> Iterator[Block]:
    """Group numbered lines into blocks separated by blank (whitespace-only) lines.

    With ``comments``, a line starting with ``#`` and a space is a comment: it is neither content nor
    a separator, and belongs to the block that follows it (or that it interrupts).
    A block over ``InputLimits.max_record`` characters (or holding a line over ``max_line``) keeps no text:
    its ``too_long`` is its size.
    """
    cap = limits().max_record
    parts: list[str] = []
    notes: list[str] = []
    start, size, count = 0, 0, 0
    for lineno, text in lines:
        if comments and _COMMENT_LINE.match(text):
            if len(notes) < 100:
                notes.append(text.strip()[:_MAX_LABEL_LINE])
            continue
        stripped = text.strip() if not isinstance(text, LongLine) else text
        if stripped:
            start = start if count else lineno
            count += 1
            size += text.size if isinstance(text, LongLine) else len(stripped) + 1
            if size > cap or isinstance(text, LongLine):
                parts = []  # dropped: only its size is kept
            else:
                parts.append(stripped)
        elif count:
            yield Block(start, " ".join(parts), count, tuple(notes), size if not parts else 0)
            parts, notes, size, count = [], [], 0, 0
    if count:
        yield Block(start, " ".join(parts), count, tuple(notes), size if not parts else 0)


def too_long_block(source: str, block: Block) -> BadRecord:
    return BadRecord(
        source,
        block.line,
        f"paragraph is {block.too_long:,} characters or more, over the "
        f"{limits().max_record:,}-character limit of one record (not read)",
        kind="too-long",
    )


def is_label_line(block: Block) -> bool:
    """A single short line containing '·' or '->', or naming one of ``KNOWN_AREAS``."""
    text = block.text
    return (
        block.lines == 1
        and len(text) < _MAX_LABEL_LINE
        and (any(separator in text for separator in SEPARATORS) or text in KNOWN_AREAS)
    )


def split_et_al(text: str) -> tuple[str, bool]:
    """``text`` without the et-al marker ending it ("等", or "et" + whitespace + "al" with an optional ".") and
    the whitespace before the marker; and whether it had one.

    What the regular expression ``\\s*(?:等|et\\s+al\\.?)$`` removes, in time linear in the text: the
    expression is tried at every position of a run of spaces and scans the run to its end each time, quadratic
    (a 100,000-space line took ~60 s, holding the GIL; hostile input, round three)."""
    if text.endswith("等"):
        return text[:-1].rstrip(), True
    rest = text.removesuffix(".")
    if rest.endswith("al"):
        before = rest[:-2]
        stripped = before.rstrip()  # str.isspace is what \s matches in a str pattern
        if stripped != before and stripped.endswith("et"):
            return stripped[:-2].rstrip(), True
    return text, False


def looks_like_authors(text: str) -> bool:
    """Comma-separated short names, optionally ending with the et-al marker ("等" or "et al.")."""
    names = split_et_al(text)[0].split(",")
    return all(_looks_like_name(name.strip()) for name in names)


def _looks_like_name(name: str) -> bool:
    words = name.split()
    return 0 < len(words) <= _MAX_AUTHOR_WORDS and len(name) <= _MAX_AUTHOR_CHARS and not _SENTENCE_END.search(name)


def looks_like_header(text: str) -> bool:
    """A short first paragraph without a sentence end, e.g. "ICLR 2024 Papers"."""
    return len(text) < _MAX_HEADER and not _SENTENCE_END.search(text)


def header_record(source: str, block: Block) -> BadRecord:
    """The first paragraph of a text dump taken as the page's header: reported, never dropped silently."""
    return BadRecord(
        source,
        block.line,
        f"first paragraph {block.text[:60]!r} taken as the dump's header and "
        f"not labeled (if it is an abstract, add a header line above it)",
        kind="header",
    )
