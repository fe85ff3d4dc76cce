"""Output rows: one per labeled record (JSONL object or CSV line) and one per error, as bytes; what a run counts
(``Counters``, kept in every checkpoint, so a resumed run keeps counting) and the end-of-run summary lines the
CLI prints (a new figure is a ``Counters`` field updated in ``add`` and a line in ``summary_lines``); and
:func:`label_chunk`, what one chunk of records becomes (one backend call, its rows, error rows and counts), run by
the labeling loop or by its worker processes.

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
from dataclasses import dataclass
from typing import Any

from papertrack.features.ingest import BadRecord, Record
from papertrack.features.spreadsheet import spreadsheet_safe
from papertrack.serving.batch.labeler.label_errors import LabelError

RANKED_KEYS = ("tracks", "areas")  # the answer fields a row reshapes; every other field is copied


def row(record: Record, answer: Mapping[str, Any], top_k: int) -> dict[str, Any]:
    """The output row of one labeled record, in output order (the JSONL object; CSV flattens it)."""
    tracks = answer["tracks"][:top_k]
    top_area = answer["areas"][0]
    out: dict[str, Any] = {"id": record.id}
    if record.number is not None:
        out["number"] = record.number  # an OpenReview note's number, to join the rows back
    out |= {
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
            "number",
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
            _cell(r.get("number")),
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
    """JSON lines of the records that could not be labeled: where, id (and an OpenReview note's number, as its
    labeled row would), kind and the reason."""
    return _lines(json.dumps(_error_row(item, kind, reason), ensure_ascii=False) for item, kind, reason in items)


def _error_row(item: Record | BadRecord, kind: str, reason: str) -> dict[str, Any]:
    out: dict[str, Any] = {"source": item.source, "line": item.line, "id": item.id}
    if item.number is not None:
        out["number"] = item.number
    return out | {"kind": kind, "reason": reason}


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


# --------------------------------------------------------------------------- what a run counts

SUMMARY_K = 3  # the summary reports top-1 and top-3 whatever --top-k is


@dataclass
class Counters:
    inputs: int = 0
    rows: int = 0
    errors: int = 0
    labeled: int = 0  # rows whose input had a label
    top1: int = 0
    top3: int = 0
    unknown_labels: int = 0  # given labels that are not in the model's label set
    duplicate_ids: int = 0  # records whose id an earlier record already had (both are labeled)
    headers: int = 0  # of the errors: first paragraphs of text dumps taken as the page's header

    def absorb(self, other: Counters) -> None:
        """Add ``other``'s counts (a chunk's) to these."""
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)

    def add(self, record: Record, answer: Mapping[str, Any], known: frozenset[str]) -> None:
        """Count one labeled row (its accuracy when the record has a label)."""
        if record.label is None:
            return
        self.labeled += 1
        ranked = [t["label"] for t in answer["tracks"][:SUMMARY_K]]
        self.top1 += bool(ranked) and ranked[0] == record.label
        self.top3 += record.label in ranked
        self.unknown_labels += record.label not in known


# --------------------------------------------------------------------------- one chunk labeled

Labeled = tuple[Record, Mapping[str, Any]]  # a record and the model's answer for it


@dataclass
class Done:
    """A labeled chunk: its rows and error rows as bytes, its counts, and (when asked) its labeled answers."""

    rows: bytes
    errors: bytes
    counters: Counters
    labeled: list[Labeled] | None = None


def label_chunk(items: Sequence[Record | BadRecord], backend, rows: RowFormat, k: int, answers: bool = False) -> Done:
    """One backend call for the chunk's usable records, and the bytes of its rows and error rows."""
    labeled, failed = _label_chunk(items, backend, k)
    counters = Counters(inputs=len(items), rows=len(labeled), errors=len(failed))
    counters.headers = sum(kind == "header" for _, kind, _ in failed)
    for record, answer in labeled:
        counters.add(record, answer, backend.labels)
    return Done(rows.rows(labeled), error_rows(failed), counters, labeled if answers else None)


def _label_chunk(
    items: Sequence[Record | BadRecord], backend, k: int
) -> tuple[list[Labeled], list[tuple[Record | BadRecord, str, str]]]:
    """One backend call for the chunk's usable records: (labeled records, failed items with kind and reason)."""
    good = [item for item in items if isinstance(item, Record)]
    results = backend.label(good, k) if good else []
    if len(results) != len(good):  # pragma: no cover - a backend bug, never data
        raise LabelError(f"the model answered {len(results)} results for {len(good)} records")
    answers = iter(results)
    labeled, failed = [], []
    for item in items:
        if isinstance(item, BadRecord):
            failed.append((item, item.kind, item.reason))
            continue
        answer = next(answers)
        if isinstance(answer, str):
            failed.append((item, "rejected", answer))
        else:
            labeled.append((item, answer))
    return labeled, failed


def summary_lines(result) -> list[str]:
    """The end-of-run report of a :class:`~papertrack.serving.batch.labeler.run.LabelResult`."""
    c = result.counters
    headers = (
        ""
        if not c.headers
        else ", of which 1 is a text dump's header paragraph"
        if c.headers == 1
        else f", of which {c.headers:,} are text dumps' header paragraphs"
    )
    lines = [
        f"{c.inputs:,} input records = {c.rows:,} labeled rows ({result.paths.output}) + "
        f"{c.errors:,} errors ({result.paths.errors}{headers})"
    ]
    resumed = f" (resumed after {result.resumed_from:,})" if result.resumed_from else ""
    lines.append(f"{result.seconds:.2f} s, {result.rate:,.0f} abstracts/s{resumed}")
    if c.labeled:
        unknown = f"; {c.unknown_labels:,} given labels are not in the model's label set" if c.unknown_labels else ""
        lines.append(
            f"{c.labeled:,} inputs had a label: top-1 {c.top1 / c.labeled:.3f}, top-3 {c.top3 / c.labeled:.3f}{unknown}"
        )
    if c.duplicate_ids:
        lines.append(
            f"warning: {c.duplicate_ids:,} records have the id of an earlier record (both are labeled; "
            f"ids are kept as given)"
        )
    return lines
