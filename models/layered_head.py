"""A taxonomy answered by the main taxonomy's fitted models and a cheap layer of its own (issue 36: heads that share
the work).

A crosswalked taxonomy (ICML 2025, NeurIPS 2025) learns mostly from the main taxonomy's papers mapped into its
names. Rather than fitting every candidate again on those papers, its head reuses the main taxonomy's fitted models
and maps their probabilities (in the main taxonomy's names) into its own names with a :class:`NameLayer` — a
probability-weighted table of "answered in the main names" → "labelled in this taxonomy's names", counted on the
head's training rows (the older papers through the crosswalk, and its own papers). :func:`layered` is the one rule,
applied by the sweep to out-of-fold matrices (:mod:`papertrack.training.head_layer`) and by :class:`LayeredHead`
at prediction time, so the evaluated figures describe what the registered model computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from papertrack.models.ensemble import combine

SMOOTHING = 0.1  # pseudo-count spread over a row of the table (a main name seen on few rows answers near uniform)
COUNT_POWER = 4.0  # a training row without a main label counts its answer sharpened to this power
ANSWER_POWER = 2.0  # answers are sharpened to this power before the table (flat answers wash out through it)


def _sharpened(proba: np.ndarray, power: float) -> np.ndarray:
    p = np.power(np.clip(proba, 0.0, None), power)
    return p / np.maximum(p.sum(axis=1, keepdims=True), 1e-300)


class NameLayer:
    """``table_[a, b]``: the probability of this taxonomy's label ``b`` for a paper of main label ``a``, counted
    on training rows: a row with a main label (a main paper, through the crosswalk) counts once in its (main label,
    label) cell; a row without one (a venue's own paper) spreads its count over the main names by its answer
    sharpened to :data:`COUNT_POWER`. Each row of the table is smoothed by :data:`SMOOTHING` and normalised.
    :meth:`transform` maps answers, sharpened to :data:`ANSWER_POWER`, through the table."""

    def __init__(self, n_labels: int, smoothing: float = SMOOTHING):
        self.n_labels = n_labels
        self.smoothing = smoothing

    def fit(self, proba: np.ndarray, y: np.ndarray, main_y: np.ndarray | None = None) -> NameLayer:
        """``proba``: the rows' answers in the main names; ``y``: their labels here; ``main_y``: their main labels
        (-1: none; None: no row has one)."""
        if len(proba) != len(y) or (main_y is not None and len(main_y) != len(y)):
            raise ValueError(f"{len(proba)} rows of answers but {len(y)} labels")
        counts = _sharpened(proba, COUNT_POWER)
        if main_y is not None:
            known = np.flatnonzero(main_y >= 0)
            counts[known] = 0.0
            counts[known, main_y[known]] = 1.0
        onehot = np.zeros((len(y), self.n_labels))
        onehot[np.arange(len(y)), y] = 1.0
        table = counts.T @ onehot + self.smoothing / self.n_labels
        self.table_ = table / table.sum(axis=1, keepdims=True)
        return self

    def transform(self, proba: np.ndarray) -> np.ndarray:
        """Answers in the main taxonomy's names -> in this taxonomy's (rows summing to 1)."""
        out = _sharpened(proba, ANSWER_POWER) @ self.table_
        return out / np.maximum(out.sum(axis=1, keepdims=True), 1e-300)


def layered(member_probas: Sequence[np.ndarray], layers: Sequence[NameLayer], weights: Sequence[float], rule: str):
    """Each member's probabilities (main names) through its layer, combined with ``weights`` by ``rule``."""
    return combine([layer.transform(p) for p, layer in zip(member_probas, layers)], weights, rule)


class LayeredHead:
    """A taxonomy's predictor: the main taxonomy's fitted classifier ``base`` (an ensemble answers per member, its
    members sharing their feature steps), ``extra`` fitted models (main names; members the main ensemble left
    out), and ``members`` — (name of an answer, its :class:`NameLayer`, weight) — combined by ``rule`` over
    ``n_labels``. ``base`` is the main predictor's own object (stored once in the artifact's pickle)."""

    def __init__(
        self,
        base: Any,
        base_name: str,
        members: Sequence[tuple[str, NameLayer, float]],
        n_labels: int,
        rule: str = "mean",
        extra: Sequence[tuple[str, Any]] = (),
    ):
        self.base, self.base_name = base, base_name
        self.members = list(members)
        self.extra = list(extra)
        self.n_labels = n_labels
        self.rule = rule
        self.classes_ = np.arange(n_labels)

    def answers(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Every answer in the main names, by member name."""
        texts = list(texts)
        inner = getattr(self.base, "members_", None)
        if inner:
            out = dict(zip((name for name, _, _ in inner), self.base.member_proba(texts)))
        else:
            out = {self.base_name: self.base.predict_proba(texts)}
        out.update({name: model.predict_proba(texts) for name, model in self.extra})
        return out

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        answers = self.answers(texts)
        return layered(
            [answers[name] for name, _, _ in self.members],
            [layer for _, layer, _ in self.members],
            [w for *_, w in self.members],
            self.rule,
        )

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.predict_proba(texts).argmax(axis=1)

    def text_features(self, texts: Sequence[str]):
        """The main classifier's features (the neighbour index)."""
        return self.base.text_features(texts)
