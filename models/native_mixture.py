"""A crosswalked taxonomy's model: the sweep's candidate mixed with a model of the taxonomy's own papers only.

A crosswalked head (ICML 2025) learns mostly from older papers mapped into its names through the crosswalk; the
mapping is approximate (a split track teaches every new name it splits into, a name the venue dropped teaches its
area) and the older papers' label frequencies are not the venue's. A model fitted on the venue's own papers
alone has neither flaw but little data. Their arithmetic mixture, ``(1 - alpha) * base + alpha * native``, is
better than either on the venue's own papers ("new names known", BENCHMARKS.md issue 25); ``alpha`` is chosen on
out-of-fold answers (:mod:`papertrack.training.native_mixture`).

:func:`mix` is the one rule, applied by the sweep to out-of-fold matrices and by :class:`NativeMixture` at
prediction time, so the cross-validated figures describe what the registered model computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def mix(base: np.ndarray, native: np.ndarray, alpha: float) -> np.ndarray:
    """``(1 - alpha) * base + alpha * native``: a distribution whenever both are (rows summing to 1)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"the native model's share must be within [0, 1], got {alpha}")
    if base.shape != native.shape:
        raise ValueError(f"base probabilities {base.shape} and native probabilities {native.shape} differ in shape")
    return (1.0 - alpha) * base + alpha * native


class NativeMixture:
    """Fitted ``base`` (the candidate, fitted on every row of the taxonomy's training set) and ``native`` (fitted
    on the taxonomy's own papers only), both answering over the same ``n_labels``, mixed by :func:`mix`.

    ``members_`` lists both sides' linear parts with their share of the answer (an ensemble base: its members,
    each scaled by ``1 - alpha``), so an explanation names the member it explains and its weight;
    ``text_features`` is the base's (the neighbour index)."""

    def __init__(self, base: Any, native: Any, alpha: float, n_labels: int, native_name: str = "native"):
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"a native mixture needs a share strictly within (0, 1), got {alpha}")
        self.base = base
        self.native = native
        self.alpha = float(alpha)
        self.n_labels = n_labels
        self.native_name = native_name
        self.classes_ = np.arange(n_labels)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        return mix(self.base.predict_proba(texts), self.native.predict_proba(texts), self.alpha)

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.predict_proba(texts).argmax(axis=1)

    @property
    def members_(self) -> list[tuple[str, Any, float]]:
        inner = getattr(self.base, "members_", None) or [("base", self.base, 1.0)]
        base = [(name, model, (1.0 - self.alpha) * w) for name, model, w in inner]
        return [*base, (self.native_name, self.native, self.alpha)]

    def text_features(self, texts: Sequence[str]):
        return self.base.text_features(texts)
