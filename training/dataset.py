"""Reading the training set: ``load_dataset`` is the strict reader for training — an invalid record is fatal,
empty abstracts and duplicates (the same normalised abstract, across all files; the first occurrence is kept)
are skipped and counted in a ``LoadSummary``, and a label that is still the model's guess
(``Record.suggested``, written by ``papertrack suggest``) is left out unless ``accept_suggested``.

The readers themselves are :mod:`papertrack.features.ingest`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from os import PathLike

from papertrack.features import labels as label_grammar
from papertrack.features.ingest import (
    BadRecord,
    IngestError,
    Record,
    detect_format,
    display_name,
    iter_records,
    make_id,
)
from papertrack.features.labels import is_known_area

NAME_MIN_RECORDS = 5  # a label the labeled data holds at least this often is one of its taxonomy's names


@dataclass
class LoadSummary:
    """What ``load_dataset`` read, kept and skipped."""

    files: list[str] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    read: int = 0
    kept: int = 0
    duplicates: int = 0
    empty: int = 0
    conflicting_duplicates: int = 0  # duplicates whose label differs from the kept record's
    headers: int = 0  # first paragraphs of text dumps taken as a header
    unknown_areas: dict[str, int] = field(default_factory=dict)  # areas outside the known taxonomy
    suggested: int = 0  # records whose label is still the model's guess (skipped unless accepted)
    accepted_suggested: bool = False
    label_counts: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """Short report lines, e.g. "read 2,000 records from 1 file (jsonl)", "kept 1,996"."""
        formats = ", ".join(dict.fromkeys(self.formats))
        report = [
            f"read {_plural(self.read, 'record')} from {_plural(len(self.files), 'file')} ({formats})",
            f"kept {self.kept:,}",
        ]
        if self.duplicates:
            skipped = f"skipped {_plural(self.duplicates, 'duplicate')}"
            if self.conflicting_duplicates:
                skipped += f" ({self.conflicting_duplicates:,} with a different label)"
            report.append(skipped)
        if self.empty:
            report.append(f"skipped {_plural(self.empty, 'empty abstract')}")
        if self.headers:
            report.append(f"skipped {_plural(self.headers, 'header paragraph')}")
        if self.unknown_areas:
            areas = ", ".join(f"{area!r} ({count:,})" for area, count in list(self.unknown_areas.items())[:5])
            report.append(
                f"warning: {_plural(sum(self.unknown_areas.values()), 'record')} in "
                f"{_plural(len(self.unknown_areas), 'area')} outside the known taxonomy: {areas} "
                f"(check the spelling)"
            )
        if self.suggested and self.accepted_suggested:
            report.append(f"kept {_plural(self.suggested, 'model-suggested label')} (--accept-suggested)")
        elif self.suggested:
            report.append(
                f"skipped {_plural(self.suggested, 'model-suggested label')} (still the model's guess; "
                "--accept-suggested trains on them)"
            )
        if self.label_counts:
            report.append(_plural(len(self.label_counts), "distinct label"))
        return report


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def load_dataset(
    paths: str | PathLike | Iterable[str | PathLike],
    fmt: str | None = None,
    *,
    labeled: bool = True,
    accept_suggested: bool = False,
) -> tuple[list[Record], LoadSummary]:
    """Read training records from one or more files.

    An invalid record is fatal (``IngestError`` with its file, line and reason).  Empty abstracts
    and duplicates (same ``abstract_key`` as an earlier record, across all files) are skipped and
    counted; the first occurrence is kept.  Records whose label is still the model's guess
    (``Record.suggested``) are counted and skipped unless ``accept_suggested``.
    """
    path_list = [paths] if isinstance(paths, (str, PathLike)) else list(paths)
    if not path_list:
        raise ValueError("load_dataset needs at least one path")
    summary = LoadSummary(accepted_suggested=accept_suggested)
    records: list[Record] = []
    seen: dict[str, str | None] = {}  # make_id(abstract) -> label of the kept record
    with label_grammar.warnings_after_reading() as pending:
        for path in path_list:
            file_format = detect_format(path, fmt)
            summary.files.append(display_name(path))
            summary.formats.append(file_format)
            for item in iter_records(path, file_format, labeled=labeled):
                summary.read += 1
                record = _accept(item, summary, seen)
                if record is not None:
                    records.append(record)
    # the names a taxonomy knows come from its data: a label (and an area) held by NAME_MIN_RECORDS records is
    # a name, not a misspelling; rarer ones near a known name are still said
    by_label = Counter(r.label for r in records if r.label)
    by_area = Counter(r.area for r in records if r.label and r.area)
    label_grammar.learn_names(
        [label for label, n in by_label.items() if n >= NAME_MIN_RECORDS]
        + [area for area, n in by_area.items() if n >= NAME_MIN_RECORDS]
    )
    label_grammar.give_warnings(dict.fromkeys(pending))
    summary.kept = len(records)
    summary.unknown_areas = dict(Counter(r.area for r in records if r.area and not is_known_area(r.area)).most_common())
    summary.label_counts = dict(Counter(r.label for r in records if r.label is not None).most_common())
    return records, summary


def _accept(item: Record | BadRecord, summary: LoadSummary, seen: dict[str, str | None]) -> Record | None:
    """The record to keep, or None after counting it as empty or duplicate; invalid is fatal."""
    if isinstance(item, BadRecord):
        if item.kind == "header":
            summary.headers += 1
            return None
        if item.kind != "empty":
            raise IngestError(item.source, item.line, item.reason)
        summary.empty += 1
        return None
    key = make_id(item.abstract)
    if key in seen:
        summary.duplicates += 1
        summary.conflicting_duplicates += seen[key] != item.label
        return None
    if item.suggested:
        summary.suggested += 1
        if not summary.accepted_suggested:
            return None  # not seen either: a human label of the same abstract, later, is kept
    seen[key] = item.label
    return item
