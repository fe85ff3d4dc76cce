"""Turning loaded records into training arrays, and the digest that identifies a training set."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from papertrack.errors import UsageError
from papertrack.features.ingest import Record, abstract_key
from papertrack.features.text import model_text
from papertrack.models.hierarchy import LabelSpace


@dataclass
class TrainingSet:
    records: list[Record]
    space: LabelSpace
    y: np.ndarray
    texts: list[str]
    digest: str

    @classmethod
    def from_records(cls, records: list[Record], use_title: bool = False) -> "TrainingSet":
        labels = [r.label for r in records]
        if any(label is None for label in labels):
            raise UsageError("every training record needs a label")
        space = LabelSpace.from_labels(labels)
        texts = [model_text(r.abstract, r.title, use_title) for r in records]
        return cls(records, space, space.encode(labels), texts, data_digest(records))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"id": [r.id for r in self.records], "title": [r.title for r in self.records],
                             "abstract": [r.abstract for r in self.records],
                             "label": [r.label for r in self.records]})


def data_digest(records: list[Record]) -> str:
    """A short digest of (abstract, label) pairs, independent of record order and of ids."""
    lines = sorted(f"{abstract_key(r.abstract)}\t{r.label}" for r in records)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]
