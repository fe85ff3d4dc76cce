"""The one output-kind rule: a file's kind is read from its extension (:data:`KINDS`); each writer names the
kinds it writes and, for any other name, the fix (an error of its own family)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from papertrack.errors import PapertrackError

KINDS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}


def output_kind(path: Path, accepted: Collection[str], fix: str, error: type[PapertrackError]) -> str:
    """The kind of the output ``path`` ("jsonl", "csv", "parquet" or "text") when it is one of ``accepted``; else
    ``error("<path>: <fix>")``."""
    kind = KINDS.get(path.suffix.lower())
    if kind is None or kind not in accepted:
        raise error(f"{path}: {fix}")
    return kind
