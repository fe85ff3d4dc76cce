"""The label space: tracks ("Area · Subarea" or an area alone) and the areas they roll up to.

Area probability is the sum of the probabilities of the labels under that area, so an area answer
and a track answer can never disagree. An area-only label ("Deep Learning") is a label of its own
that rolls up to its area: an area-only training record still teaches the area.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from papertrack.errors import UsageError
from papertrack.features.labels import normalise_label


@dataclass(frozen=True)
class LabelSpace:
    labels: tuple[str, ...]
    areas: tuple[str, ...]
    label_area: np.ndarray = field(repr=False)  # index into ``areas`` for each label
    subareas: tuple[str | None, ...] = field(repr=False)

    @classmethod
    def from_labels(cls, labels: Iterable[str]) -> LabelSpace:
        ordered = tuple(sorted(set(labels)))
        if not ordered:
            raise UsageError("no labels: the training data has no labeled record")
        split = [normalise_label(label) for label in ordered]
        areas = tuple(sorted({area for area, _ in split}))
        index = {area: i for i, area in enumerate(areas)}
        label_area = np.array([index[area] for area, _ in split], dtype=np.int64)
        return cls(ordered, areas, label_area, tuple(sub for _, sub in split))

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    def encode(self, labels: Sequence[str]) -> np.ndarray:
        index = {label: i for i, label in enumerate(self.labels)}
        try:
            return np.array([index[label] for label in labels], dtype=np.int64)
        except KeyError as exc:
            raise ValueError(f"label {exc.args[0]!r} is not in the label space") from None

    def area_of(self, label_index: np.ndarray) -> np.ndarray:
        return self.label_area[label_index]

    def area_proba(self, proba: np.ndarray) -> np.ndarray:
        """Sum label probabilities per area: (n, n_labels) -> (n, n_areas)."""
        out = np.zeros((proba.shape[0], len(self.areas)), dtype=proba.dtype)
        np.add.at(out.T, self.label_area, proba.T)
        return out

    def hierarchy(self) -> dict[str, list[str]]:
        """Area -> its labels, for documentation and the service's metadata."""
        tree: dict[str, list[str]] = {area: [] for area in self.areas}
        for label, area_index in zip(self.labels, self.label_area):
            tree[self.areas[area_index]].append(label)
        return tree
