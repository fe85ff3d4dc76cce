"""What a labeling run counts (kept in every checkpoint, so a resumed run keeps counting) and the
end-of-run summary lines the CLI prints. A new figure is a ``Counters`` field updated in ``add`` and
a line in ``summary_lines``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from papertrack.features.ingest import Record

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
