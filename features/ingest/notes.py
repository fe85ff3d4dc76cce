"""OpenReview note exports and nested JSON: the fields of one JSON object as the record rules read them.

An OpenReview note (API v1 or v2) keeps its paper under ``content``: ``content.abstract`` is a string in API v1
and ``{"value": ...}`` in API v2; the note's own fields (``id``, ``forum``, ``number``, ``cdate`` ...) sit at the
top. :func:`note_fields` lifts every ``content`` field to the top (a top-level field of the same name wins), takes
a v2 field's ``value``, and gives a note without ``id`` its ``forum`` or ``number`` as id — so a notes export reads
like any other JSON record, with no option.

Any other nesting is read with a dotted path (``--abstract-column paper.abstract``): :func:`resolve` follows it
through nested objects (names matched case-insensitively), taking a v2-style ``{"value": ...}`` at its end.
:func:`nested_path` finds where a field sits when a record lacks it at the top, for the hint of the message.
"""

from __future__ import annotations

from collections.abc import Mapping

CONTENT = "content"  # where an OpenReview note keeps the paper's fields
NOTE_IDS = ("id", "forum", "number")  # a note's id: the first of these it has
_MISSING = object()
_SEARCH_DEPTH = 4  # how deep :func:`nested_path` looks for a field


def unwrap(value: object) -> object:
    """An OpenReview API v2 field ``{"value": x, ...}`` as ``x``; any other value as it is."""
    if isinstance(value, Mapping) and "value" in value:
        return value["value"]
    return value


def note_fields(fields: dict[str, object]) -> dict[str, object]:
    """A record's fields (lower-case names) with an OpenReview note's ``content`` lifted to the top.

    ``content.X`` (v1) and ``content.X.value`` (v2) become ``X`` unless the record has its own ``X``; a note with
    no ``id`` gets its ``forum`` (else its ``number``) as id. ``content`` itself stays, for dotted paths. A record
    without a ``content`` object is returned as it is.
    """
    content = fields.get(CONTENT)
    if not isinstance(content, Mapping):
        return fields
    out = dict(fields)
    for key, value in content.items():
        name = str(key).strip().lower()
        if name not in out:
            out[name] = unwrap(value)
    if out.get("id") in (None, ""):
        for name in NOTE_IDS[1:]:
            if out.get(name) not in (None, ""):
                out["id"] = str(out[name])
                break
    return out


def resolve(fields: Mapping[str, object], path: str) -> object:
    """The value at a dotted ``path`` (``content.abstract.value``) in a record's fields, names matched
    case-insensitively; ``{"value": x}`` at the end is ``x``. :data:`_MISSING` when the path leads nowhere."""
    value: object = fields
    for part in path.strip().split("."):
        if not isinstance(value, Mapping):
            return _MISSING
        value = _get(value, part.strip())
        if value is _MISSING:
            return _MISSING
    return unwrap(value)


def found(value: object) -> bool:
    """True unless ``value`` is :func:`resolve`'s answer for a path that leads nowhere."""
    return value is not _MISSING


def _get(mapping: Mapping, name: str) -> object:
    if name in mapping:
        return mapping[name]
    lowered = name.lower()
    for key, value in mapping.items():
        if str(key).strip().lower() == lowered:
            return value
    return _MISSING


def nested_path(fields: Mapping[str, object], name: str, depth: int = _SEARCH_DEPTH) -> str | None:
    """The dotted path of the first field called ``name`` (any case) inside nested objects, None when there is
    none; a v2-style ``{"value": ...}`` field's path ends in ``.value``."""
    for key, value in fields.items():
        if not isinstance(value, Mapping) or depth <= 0:
            continue
        for inner_key, inner in value.items():
            if str(inner_key).strip().lower() == name:
                suffix = ".value" if isinstance(inner, Mapping) and "value" in inner else ""
                return f"{key}.{inner_key}{suffix}"
        deeper = nested_path(value, name, depth - 1)
        if deeper is not None:
            return f"{key}.{deeper}"
    return None


def field_list(fields: Mapping[str, object], limit: int = 12) -> str:
    """The names of a record's fields for a message: ``id, number, content`` (``...`` past ``limit``)."""
    names = [str(key) for key in fields]
    shown = ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
    return shown or "none"
