"""Output rows: one per labeled record (JSONL object or CSV line) and one per error, as bytes.

A row is built from the record and the model's :class:`~papertrack.models.answer.AnswerDict` by :func:`row`
— the one place that extracts the top-k tracks, the top area and ``in_top_k``. Fields of the answer
beyond ``tracks``/``areas`` (e.g. a prediction set) flow through: JSONL rows carry every one of them
after ``in_top_k``; a CSV file has a fixed header, so it carries the ones named in ``extras``
(lists and objects as JSON text).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from papertrack.features.ingest import BadRecord, Record

RANKED_KEYS = ("tracks", "areas")  # the answer fields a row reshapes; every other field is copied


def row(record: Record, answer: Mapping[str, Any], top_k: int) -> dict[str, Any]:
    """The output row of one labeled record, in output order (the JSONL object; CSV flattens it)."""
    tracks = answer["tracks"][:top_k]
    top_area = answer["areas"][0]
    out: dict[str, Any] = {
        "id": record.id,
        "source": record.source,
        "line": record.line,
        "title": record.title,
        "tracks": [{"label": t["label"], "probability": t["probability"]} for t in tracks],
        "area": top_area["area"],
        "area_probability": top_area["probability"],
        "label": record.label,
        "in_top_k": None if record.label is None else any(t["label"] == record.label for t in tracks),
    }
    out.update((key, value) for key, value in answer.items() if key not in RANKED_KEYS)
    return out


class RowFormat:
    """Serialises rows: ``header()`` once, then ``rows(...)`` per chunk, as bytes."""

    def __init__(self, kind: str, top_k: int, extras: Sequence[str] = ()):
        self.kind, self.top_k, self.extras = kind, top_k, tuple(extras)
        self.columns = [
            "id",
            "source",
            "line",
            "title",
            *[c for i in range(1, top_k + 1) for c in (f"track_{i}", f"probability_{i}")],
            "area",
            "area_probability",
            "label",
            "in_top_k",
            *self.extras,
        ]

    def header(self) -> bytes:
        return _csv([self.columns]) if self.kind == "csv" else b""

    def rows(self, items: Iterable[tuple[Record, Mapping[str, Any]]]) -> bytes:
        built = [row(record, answer, self.top_k) for record, answer in items]
        if self.kind == "jsonl":
            return _lines(json.dumps(r, ensure_ascii=False) for r in built)
        return _csv([self._cells(r) for r in built])

    def _cells(self, r: dict[str, Any]) -> list[Any]:
        """The CSV cells of a row; every text cell spreadsheet-safe (:func:`spreadsheet_safe`)."""
        cells: list[Any] = [
            spreadsheet_safe(r["id"]),
            spreadsheet_safe(r["source"]),
            r["line"],
            spreadsheet_safe(r["title"] or ""),
        ]
        for t in r["tracks"]:
            cells += [spreadsheet_safe(t["label"]), repr(float(t["probability"]))]
        cells += ["", ""] * (self.top_k - len(r["tracks"]))
        cells += [
            spreadsheet_safe(r["area"]),
            repr(float(r["area_probability"])),
            spreadsheet_safe(r["label"] or ""),
            _cell(r["in_top_k"]),
        ]
        cells += [spreadsheet_safe(_cell(r.get(name))) for name in self.extras]
        return cells


def error_rows(items: Iterable[tuple[Record | BadRecord, str, str]]) -> bytes:
    """JSON lines of the records that could not be labeled: where, id, kind and the reason."""
    return _lines(
        json.dumps(
            {"source": item.source, "line": item.line, "id": item.id, "kind": kind, "reason": reason},
            ensure_ascii=False,
        )
        for item, kind, reason in items
    )


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may run as a formula (OWASP)


def spreadsheet_safe(text: str) -> str:
    """``text`` with a ``'`` in front when it starts like a formula (``=``, ``+``, ``-``, ``@``, tab, CR), so a
    spreadsheet opening the CSV shows it as text instead of running it (OWASP's CSV-injection advice)."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _cell(value: Any) -> str:
    """A CSV cell: '' for None, true/false, repr of a float, JSON for lists and objects."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _lines(texts: Iterable[str]) -> bytes:
    lines = list(texts)
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _csv(table: list[list]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(table)
    return buffer.getvalue().encode("utf-8")
