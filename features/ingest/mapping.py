"""One JSON object, CSV row or Parquet row as a record: the field names matched case-insensitively, the label
from 'label', 'topic' or 'area' (+ 'subarea'), authors and origin ("venue year"), lone surrogates refused.

Hostile text: a record whose used fields hold a lone surrogate escape (JSON ``"\\udc00"``, not a character,
cannot be written as UTF-8) is a ``BadRecord`` naming the field — not repaired, since any replacement would
change the data silently.
"""

from __future__ import annotations

import re

from papertrack.features.ingest.records import SUGGESTED_FIELD, BadRecord, Record, make_record, normalise_text
from papertrack.features.labels import format_label

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
    fields = {str(key).strip().lower(): value for key, value in obj.items()}
    record_id = _optional_text(fields.get("id"))
    surrogate = _lone_surrogate(fields)
    if surrogate is not None:
        return BadRecord(source, line, surrogate, _printable(record_id))
    if "abstract" not in fields:
        return BadRecord(source, line, "no 'abstract' field", record_id)
    abstract = fields["abstract"]
    if abstract is not None and not isinstance(abstract, str):
        reason = f"abstract is a {json_type(abstract)}, not a string"
        return BadRecord(source, line, reason, record_id)
    try:
        label = None if labeled is False else _label_text(fields)
    except ValueError as exc:
        return BadRecord(source, line, str(exc), record_id)
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
    )


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
