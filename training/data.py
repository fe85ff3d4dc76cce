"""Turning loaded records into training arrays, the digest that identifies a training set, the
default training data (both labeled years) and the sources a shift holdout keeps apart."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from papertrack.errors import UsageError
from papertrack.features.ingest import Record, abstract_key
from papertrack.features.text import model_text
from papertrack.models.hierarchy import LabelSpace

# the labeled years papertrack trains on by default, in $PAPERTRACK_DATA_DIR
DEFAULT_FILES = ("iclr2024_topics.jsonl", "icml2024_topics.jsonl")


def default_data_paths(data_dir: Path) -> list[Path]:
    """Both labeled years; a missing file is a UsageError that says what to do."""
    paths = [Path(data_dir) / name for name in DEFAULT_FILES]
    missing = [p for p in paths if not p.exists()]
    if missing:
        found = [p.name for p in paths if p.exists()]
        raise UsageError(
            f"the default training data is both labeled years ({', '.join(DEFAULT_FILES)}) in {data_dir}, but "
            f"{', '.join(str(p) for p in missing)} is missing. Set PAPERTRACK_DATA_DIR to the folder holding both, "
            + (f"or train on what you have: papertrack train --data {paths[0] if found else 'FILE'}"
               if found else "or pass --data FILE"))
    return paths


def source_of(record: Record) -> str:
    """Where a record comes from: its venue and year (e.g. "ICLR 2024") when given, else its file name."""
    return record.origin or Path(record.source).name


@dataclass
class TrainingSet:
    records: list[Record]
    space: LabelSpace
    y: np.ndarray
    texts: list[str]
    digest: str
    sources: np.ndarray  # per record: source_of(record)

    @classmethod
    def from_records(cls, records: list[Record], use_title: bool = False) -> "TrainingSet":
        labels = [r.label for r in records]
        if any(label is None for label in labels):
            raise UsageError("every training record needs a label")
        space = LabelSpace.from_labels(labels)
        texts = [model_text(r.abstract, r.title, use_title) for r in records]
        sources = np.array([source_of(r) for r in records], dtype=object)
        return cls(records, space, space.encode(labels), texts, data_digest(records), sources)

    @property
    def source_names(self) -> list[str]:
        """The sources in order of first appearance."""
        return list(dict.fromkeys(self.sources.tolist()))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"id": [r.id for r in self.records], "title": [r.title for r in self.records],
                             "abstract": [r.abstract for r in self.records],
                             "label": [r.label for r in self.records], "source": self.sources.tolist()})

    def label_distribution(self) -> pd.DataFrame:
        """Records per label and source (one column per source, then the total), largest first."""
        counts = Counter(zip(self.y.tolist(), self.sources.tolist()))
        table = pd.DataFrame({"label": list(self.space.labels),
                              "area": [self.space.areas[a] for a in self.space.label_area]})
        for source in self.source_names:
            table[source] = [counts.get((j, source), 0) for j in range(self.space.n_labels)]
        table["total"] = np.bincount(self.y, minlength=self.space.n_labels)
        return table.sort_values("total", ascending=False, kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class Direction:
    """One direction of the shift holdout: train on every other source, test on ``heldout``."""

    trained_on: tuple[str, ...]
    heldout: str
    train: np.ndarray  # row indices
    test: np.ndarray

    @property
    def name(self) -> str:
        """e.g. ``iclr2024-to-icml2024`` (used in metric names)."""
        return f"{'+'.join(_slug(s) for s in self.trained_on)}-to-{_slug(self.heldout)}"


def _slug(source: str) -> str:
    base = source.rsplit(".", 2)[0] if source.endswith((".jsonl", ".json", ".csv", ".gz", ".txt")) else source
    return "".join(ch for ch in base.lower() if ch.isalnum() or ch in "_-").replace("_topics", "") or "source"


def shift_directions(sources: np.ndarray) -> list[Direction]:
    """Leave-one-source-out: one direction per source ([] with fewer than two sources)."""
    names = list(dict.fromkeys(np.asarray(sources).tolist()))
    if len(names) < 2:
        return []
    rows = np.arange(len(sources))
    return [Direction(tuple(n for n in names if n != held), held, rows[sources != held], rows[sources == held])
            for held in names]


def data_digest(records: list[Record]) -> str:
    """A short digest of (abstract, label) pairs, independent of record order and of ids."""
    lines = sorted(f"{abstract_key(r.abstract)}\t{r.label}" for r in records)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]
