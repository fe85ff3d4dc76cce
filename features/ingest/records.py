"""What reading yields: ``Record`` (a usable paper), ``BadRecord`` (one unusable record, with the reason) and
``IngestError`` (a problem with the whole input); how inputs are named in rows and messages; the text
normalisation and the ids every layout shares; building a record from raw field values, and from one JSON object,
CSV row or Parquet row (the field names matched case-insensitively, the label from 'label', 'topic' or 'area'
(+ 'subarea'), authors and origin ("venue year"), lone surrogates refused).

Hostile text: a record whose used fields hold a lone surrogate escape (JSON ``"\\udc00"``, not a character,
cannot be written as UTF-8) is a ``BadRecord`` naming the field — not repaired, since any replacement would
change the data silently.

Model-suggested labels (written by ``papertrack suggest``): a record whose label is still the model's own
guess is ``Record.suggested``. In the text layouts the comment ``# model-suggested: <label>`` above a label
line records the guess, in JSON/CSV the field ``model_suggested`` does. Either way the record counts as
suggested only while its label still equals the guess: a person who edits the label, or deletes the marker,
makes it a human label.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike

from papertrack.errors import PapertrackError
from papertrack.features.ingest.columns import OPTIONS, columns, did_you_mean, rename
from papertrack.features.ingest.notes import field_list, nested_path, note_fields
from papertrack.features.labels import format_label, normalise_label

SUGGESTED_MARKER = "# model-suggested:"  # the comment naming the model's guess above a label line
SUGGESTED_FIELD = "model_suggested"  # the same in JSON/CSV

STDIN_NAME = "<stdin>"  # how rows and messages name standard input (``-``), which is read from a copy
_DISPLAY_NAMES: dict[str, str] = {}  # path of such a copy -> the name shown instead


def display_name(path: str | PathLike) -> str:
    """How rows (``source``) and messages name an input: its path, or ``<stdin>`` for the copy of stdin."""
    return _DISPLAY_NAMES.get(os.fspath(path), str(path))


def name_input(path: str | PathLike, name: str) -> None:
    """Show ``path`` as ``name`` in rows and messages (see :func:`papertrack.features.ingest.expand_stdin`)."""
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
    number: int | None = None  # an OpenReview note's submission number (rows keep it, to join them back)


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
    number: int | None = None  # an OpenReview note's number, as its Record would carry (to join the rows back)


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
    number: int | None = None,
) -> Record | BadRecord:
    """Build a ``Record`` from raw field values, or the ``BadRecord`` saying why it is unusable."""
    abstract = normalise_text(abstract)
    if not abstract:
        return BadRecord(source, line, "empty abstract", record_id, "empty", number)
    if not has_content(abstract):
        return BadRecord(
            source,
            line,
            "abstract has no letters or digits (only symbols, emoji or invisible characters)",
            record_id,
            "empty",
            number,
        )
    area = subarea = None
    if labeled is not False and label is not None:
        try:
            area, subarea = normalise_label(label)
        except ValueError as exc:
            return BadRecord(source, line, f"invalid label {label!r}: {exc}", record_id, number=number)
    elif labeled:
        return BadRecord(source, line, missing_label, record_id, number=number)
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
        number=number,
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


# --------------------------------------------------------------------------- one JSON object or CSV row

_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone surrogate escape ("\\udc00" in JSON): not a character
# the fields of a JSON/CSV record that papertrack uses (checked for lone surrogates)
_TEXT_FIELDS = ("id", "abstract", "title", "label", "topic", "area", "subarea", "authors", "venue", "year")
_NO_LABEL_FIELD = "no label (field 'label', 'topic' or 'area')"
TOO_DEEP = "JSON nested too deeply (more than about 1,000 levels)"  # a JSON value Python's decoder cannot nest


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _optional_text(value: object) -> str | None:
    """A field value as normalised text, or None when it is missing or blank."""
    if value is None:
        return None
    return normalise_text(str(value)) or None


def _label_text(fields: dict[str, object]) -> str | None:
    """The raw label of a record: 'label' or 'topic', else 'area' plus optional 'subarea'."""
    label = _label_field(fields, "label") or _label_field(fields, "topic")
    if label:
        return label
    area = _label_field(fields, "area")
    return format_label(area, _label_field(fields, "subarea")) if area else None


def _label_field(fields: dict[str, object], name: str) -> str | None:
    """A stripped label field, None when missing or blank; ``ValueError`` when not a string."""
    value = fields.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"invalid label: field {name!r} is a {json_type(value)}, not a string")
    return value.strip() or None


def record_from_mapping(obj: dict, source: str, line: int, labeled: bool | None) -> Record | BadRecord:
    """Turn one JSON object, CSV row or Parquet row (field names matched case-insensitively) into a record."""
    fields = rename(note_fields({str(key).strip().lower(): value for key, value in obj.items()}))
    record_id = _optional_text(fields.get("id"))
    number = _number(fields.get("number"))
    surrogate = _lone_surrogate(fields)
    if surrogate is not None:
        return BadRecord(source, line, surrogate, _printable(record_id), number=number)
    if "abstract" not in fields:
        return BadRecord(source, line, missing_field_message(obj, "abstract"), record_id, number=number)
    abstract = fields["abstract"]
    if abstract is not None and not isinstance(abstract, str):
        reason = f"abstract is a {json_type(abstract)}, not a string"
        return BadRecord(source, line, reason, record_id, number=number)
    try:
        label = None if labeled is False else _label_text(fields)
    except ValueError as exc:
        return BadRecord(source, line, str(exc), record_id, number=number)
    guess = fields.get(SUGGESTED_FIELD)
    return make_record(
        source,
        line,
        abstract or "",
        labeled=labeled,
        missing_label=_NO_LABEL_FIELD,
        label=label,
        title=_optional_text(fields.get("title")),
        record_id=record_id,
        authors=_authors_text(fields.get("authors")),
        guess=guess if isinstance(guess, str) else None,
        origin=_origin(fields),
        number=number,
    )


def missing_field_message(obj: Mapping, field: str) -> str:
    """``no 'abstract' field (fields: id, number, content)`` for a record ``obj`` lacking the column of ``field``
    (its name, or the path given by an option), with where the field sits when it is nested, and the option."""
    name = getattr(columns(), field)
    message = f"no {name!r} field (fields: {field_list(obj)})"
    parts = [part.strip().lower() for part in name.split(".") if part.strip().lower() != "value"]
    path = nested_path(obj, parts[-1] if parts else field) or nested_path(obj, field)
    if path is not None and path.lower() != name.lower():
        message += f"; the {field} is nested: name it with {OPTIONS[field]} {path}"
    elif (near := did_you_mean(name, obj)) is not None:
        message += f'; did you mean "{near}"? name it with {OPTIONS[field]} {near}'
    return message


def _number(value: object) -> int | None:
    """An OpenReview note's ``number`` (an integer, or digits), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _lone_surrogate(fields: dict[str, object]) -> str | None:
    """Why a record cannot be used when one of its text fields holds a lone surrogate escape (e.g. the
    JSON ``"\\udc00"``): it is not a character, cannot be written as UTF-8 and would stop every writer."""
    for name in (*_TEXT_FIELDS, SUGGESTED_FIELD):
        value = fields.get(name)
        texts = value if isinstance(value, list) else [value]
        for text in texts:
            if isinstance(text, str) and (found := _SURROGATE.search(text)):
                return (
                    f"field {name!r} holds the lone surrogate escape \\u{ord(found.group()):04x} (half of a "
                    f"UTF-16 pair, not a character); fix or remove it in the input"
                )
    return None


def _printable(text: str | None) -> str | None:
    """``text`` with lone surrogates written as ``\\udc00`` (so it can be written as UTF-8)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if text else text


def _authors_text(value: object) -> str | None:
    """An 'authors' field (a list of names or one string) as one comma-separated line, None when empty."""
    if isinstance(value, list):
        value = ", ".join(normalise_text(str(name)) for name in value if str(name).strip())
    return _optional_text(value) if isinstance(value, str) else None


def _origin(fields: dict[str, object]) -> str | None:
    """ "venue year" (e.g. "ICLR 2024") when the record has both fields, else None."""
    venue, year = _optional_text(fields.get("venue")), _optional_text(fields.get("year"))
    return f"{venue} {year}" if venue and year else None


def record_from_value(value: object, source: str, line: int, labeled: bool | None) -> Record | BadRecord:
    """A decoded JSON value as a record; anything but an object is a ``BadRecord``."""
    if not isinstance(value, dict):
        return BadRecord(source, line, f"JSON value is not an object (got {json_type(value)})")
    return record_from_mapping(value, source, line, labeled)


def first_json_object(path: str | PathLike, layout: str) -> tuple[int, dict] | None:
    """(line, object) of the first record of a JSON-lines or JSON-array file; None when the first record is not a
    readable object (its reader reports that) or there is none."""
    import json

    from papertrack.features.ingest.decoding import LongLine, read_lines
    from papertrack.features.ingest.json_array import iter_json_values

    try:
        if layout == "jsonl":
            for line, text in read_lines(path):
                if isinstance(text, LongLine):
                    return None
                if not text.strip():
                    continue
                value = json.loads(text)
                return (line, value) if isinstance(value, dict) else None
            return None
        for line, _, value in iter_json_values(path):
            return (line, value) if isinstance(value, dict) else None
    except (ValueError, RecursionError, IngestError):
        return None
    return None
