"""The temperature search finds the grid's lowest log-loss, as trying every temperature does."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from papertrack.models.estimators import TEMPERATURES, _fit_temperature


def _every_temperature(scores: np.ndarray, target: np.ndarray) -> float:
    rows = np.arange(len(target))
    losses = [-np.log(softmax(scores / t, axis=1)[rows, target] + 1e-12).mean() for t in TEMPERATURES]
    return float(TEMPERATURES[int(np.argmin(losses))])


@pytest.mark.parametrize(
    "scale, shift, labels, informative",
    [
        (1.0, 0.0, 87, 1.5),  # SVM-like decision values
        (0.05, 0.0, 87, 0.05),  # nearly flat: a high temperature... or the smallest
        (40.0, -900.0, 87, 30.0),  # naive-Bayes-like log-probabilities
        (3.0, 0.0, 2, 0.0),  # two labels, no signal
        (1.0, 0.0, 5, 20.0),  # very sure and right: the lowest temperature
        (1.0, 0.0, 5, -3.0),  # sure and wrong: the highest
    ],
)
def test_the_search_finds_the_same_temperature_as_trying_each(scale, shift, labels, informative):
    rng = np.random.default_rng(labels)
    for trial in range(5):
        target = rng.integers(0, labels, 300)
        scores = rng.normal(shift, scale, (300, labels))
        scores[np.arange(300), target] += informative * (1 + trial)
        assert _fit_temperature(scores, target) == _every_temperature(scores, target)
