"""What reading yields: ``Record`` (a usable paper), ``BadRecord`` (one unusable record, with the reason) and
``IngestError`` (a problem with the whole input); how inputs are named in rows and messages; the text
normalisation and the ids every layout shares; building a record from raw field values.

Model-suggested labels (written by ``papertrack suggest``): a record whose label is still the model's own
guess is ``Record.suggested``. In the text layouts the comment ``# model-suggested: <label>`` above a label
line records the guess, in JSON/CSV the field ``model_suggested`` does. Either way the record counts as
suggested only while its label still equals the guess: a person who edits the label, or deletes the marker,
makes it a human label.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from dataclasses import dataclass
from os import PathLike

from papertrack.errors import PapertrackError
from papertrack.features.labels import format_label, normalise_label

SUGGESTED_MARKER = "# model-suggested:"  # the comment naming the model's guess above a label line
SUGGESTED_FIELD = "model_suggested"  # the same in JSON/CSV

STDIN_NAME = "<stdin>"  # how rows and messages name standard input (``-``), which is read from a copy
_DISPLAY_NAMES: dict[str, str] = {}  # path of such a copy -> the name shown instead


def display_name(path: str | PathLike) -> str:
    """How rows (``source``) and messages name an input: its path, or ``<stdin>`` for the copy of stdin."""
    return _DISPLAY_NAMES.get(os.fspath(path), str(path))


def name_input(path: str | PathLike, name: str) -> None:
    """Show ``path`` as ``name`` in rows and messages (see :mod:`papertrack.features.stdin`)."""
    _DISPLAY_NAMES[os.fspath(path)] = name


class IngestError(PapertrackError):
    """A fatal problem with an input file (missing, empty, undecodable, unreadable layout)."""

    def __init__(self, path: str | PathLike, line: int | None, message: str):
        self.path = display_name(path)
        self.line = line
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Record:
    """One usable paper: a normalised abstract with its optional title and label."""

    id: str
    abstract: str
    title: str | None
    label: str | None
    area: str | None
    subarea: str | None
    source: str
    line: int
    authors: str | None = None
    suggested: bool = False  # the label is still the model's guess (see the module doc)
    origin: str | None = None  # "venue year" when the record names both (e.g. "ICLR 2024"), else None


@dataclass(frozen=True)
class BadRecord:
    """A record that exists in the input but cannot be used; ``reason`` says why."""

    source: str
    line: int
    reason: str
    id: str | None = None
    # "empty": empty or content-free abstract; "header": a text dump's header; "too-long": a line or record over
    # the reading limits (``InputLimits``); else "invalid"
    kind: str = "invalid"


# --------------------------------------------------------------------------- text and ids


def normalise_text(text: str) -> str:
    """Join wrapped lines with one space and drop blank lines and line-edge whitespace.

    Anything inside a line (LaTeX, markdown, repeated spaces) is kept as is.
    """
    return " ".join(stripped for line in text.splitlines() if (stripped := line.strip()))


def has_content(text: str) -> bool:
    """True when the text has at least one letter or digit (not only controls, zero-width or emoji)."""
    return any(ch.isalnum() for ch in text)


def abstract_key(abstract: str) -> str:
    """The form used to spot duplicates: NFC, casefolded, whitespace collapsed and stripped."""
    return " ".join(unicodedata.normalize("NFC", abstract).casefold().split())


def make_id(abstract: str) -> str:
    """A stable id derived from the abstract: the same abstract always gets the same id."""
    digest = hashlib.sha1(abstract_key(abstract).encode("utf-8")).hexdigest()
    return f"sha1-{digest[:16]}"


# --------------------------------------------------------------------------- records


def make_record(
    source: str,
    line: int,
    abstract: str,
    *,
    labeled: bool | None,
    missing_label: str = "no label",
    label: str | None = None,
    title: str | None = None,
    record_id: str | None = None,
    authors: str | None = None,
    guess: str | None = None,
    origin: str | None = None,
) -> Record | BadRecord:
    """Build a ``Record`` from raw field values, or the ``BadRecord`` saying why it is unusable."""
    abstract = normalise_text(abstract)
    if not abstract:
        return BadRecord(source, line, "empty abstract", record_id, "empty")
    if not has_content(abstract):
        return BadRecord(
            source,
            line,
            "abstract has no letters or digits (only symbols, emoji or invisible characters)",
            record_id,
            "empty",
        )
    area = subarea = None
    if labeled is not False and label is not None:
        try:
            area, subarea = normalise_label(label)
        except ValueError as exc:
            return BadRecord(source, line, f"invalid label {label!r}: {exc}", record_id)
    elif labeled:
        return BadRecord(source, line, missing_label, record_id)
    canonical = format_label(area, subarea) if area else None
    return Record(
        record_id or make_id(abstract),
        abstract,
        title,
        canonical,
        area,
        subarea,
        source,
        line,
        authors=authors,
        origin=origin,
        suggested=canonical is not None and _same_label(guess, canonical),
    )


def _same_label(guess: str | None, canonical: str) -> bool:
    """True when ``guess`` (the model's suggestion, as written) is the label ``canonical``."""
    if not guess:
        return False
    try:
        return format_label(*normalise_label(guess)) == canonical
    except ValueError:
        return False
