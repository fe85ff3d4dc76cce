"""How sure the model is: conformal prediction sets and a "confident" flag, calibrated on held-out predictions.

Both are chosen at training time from held-out probabilities (the sweep's out-of-fold matrix of the winner)
and travel inside the prediction artifact (:class:`~papertrack.models.artifact.TrackPredictor`):

* **Prediction set** (adaptive prediction sets, Romano et al. 2020, with the deterministic score ``u = 0``):
  the score of a held-out row is the total probability of the labels ranked *above* its true label (0 when
  the top label is right). ``set_threshold`` is the conformal quantile of those scores at the nominal
  coverage (default 90%): the ``ceil((n+1)·c)``-th smallest score. A new abstract's set is every label whose
  higher-ranked labels hold at most that much probability — the top label always, then down the ranking
  until the mass above passes the threshold — so a label is in the set exactly when its score would be
  within the threshold, and about ``c`` of abstracts like the held-out ones have their true label in their
  set. An unsure answer has a long set, a sure one a set of one. (Counting the true label's own mass in
  the score, ``u = 1``, over-covers: a confidently right row then scores near 1 and drags the threshold up.)
* **Confident**: the top-1 probability is at least ``top1_threshold``, the lowest threshold at which the
  held-out top-1 precision reaches ``target_precision`` (default 0.85) on at least ``MIN_SUPPORT`` rows. Where no
  threshold reaches the target (a hard taxonomy: ICML 2025's re-cut names), the threshold with the best precision
  reachable on at least ``MIN_SUPPORT`` rows is used instead, and ``target_met`` is False with
  ``threshold_precision`` saying what it reaches — so "confident" still means "among this taxonomy's most
  precise answers", and the user is told the figure instead of never seeing a confident answer.

:func:`calibrate` also measures both honestly (:func:`cross_conformal`): the rows are split in ``folds``
parts; each part gets thresholds calibrated on the others and is scored with them, so the reported coverage
and precision are out-of-sample. The thresholds kept in the artifact are those calibrated on all rows.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

DEFAULT_COVERAGE = 0.90
DEFAULT_TARGET_PRECISION = 0.85
MIN_SUPPORT = 20  # the confident threshold must keep at least this many held-out rows
EVAL_FOLDS = 5


@dataclass(frozen=True)
class Confidence:
    """The calibration carried by a prediction artifact, and how it did on held-out rows."""

    coverage: float  # nominal coverage of the prediction sets
    set_threshold: float  # total probability a set reaches (conformal quantile of APS scores)
    target_precision: float  # top-1 precision the confident flag aims for
    top1_threshold: float  # confident <=> top-1 probability >= this
    n_calibration: int  # held-out rows used
    source: str = "out-of-fold"  # which held-out predictions
    # measured out-of-sample (cross-conformal) on the held-out rows:
    empirical_coverage: float = float("nan")
    mean_set_size: float = float("nan")
    confident_share: float = float("nan")  # share of rows flagged confident
    confident_precision: float = float("nan")  # top-1 precision on those rows
    target_met: bool = True  # False: no threshold reached target_precision; the best reachable one is used
    threshold_precision: float = float("nan")  # held-out top-1 precision above top1_threshold (in-sample)

    def sets(self, proba: np.ndarray, order: np.ndarray | None = None) -> list[np.ndarray]:
        """Per row, the label indices of its prediction set, most probable first."""
        return prediction_sets(proba, self.set_threshold, order)

    def confident(self, proba: np.ndarray) -> np.ndarray:
        return proba.max(axis=1) >= self.top1_threshold

    def metrics(self) -> dict[str, float]:
        """What training logs to MLflow (prefix ``conformal_``/``confident_``)."""
        return {
            "conformal_nominal_coverage": self.coverage,
            "conformal_empirical_coverage": self.empirical_coverage,
            "conformal_set_threshold": self.set_threshold,
            "conformal_mean_set_size": self.mean_set_size,
            "confident_target_precision": self.target_precision,
            "confident_top1_threshold": self.top1_threshold,
            "confident_share": self.confident_share,
            "confident_precision": self.confident_precision,
        }

    def to_dict(self) -> dict:
        return asdict(self)


def _order(proba: np.ndarray) -> np.ndarray:
    return np.argsort(-proba, axis=1, kind="stable")


def _mass_above(proba: np.ndarray, order: np.ndarray) -> np.ndarray:
    """(n, n_labels) in ranked order: the probability mass of the labels ranked above each position."""
    ranked = np.take_along_axis(proba, order, axis=1)
    return np.cumsum(ranked, axis=1) - ranked


def aps_scores(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per row: the probability mass of the labels ranked above the true label (ties: stable order)."""
    order = _order(proba)
    rank = np.argmax(order == y[:, None], axis=1)
    return _mass_above(proba, order)[np.arange(len(y)), rank]


def conformal_quantile(scores: np.ndarray, coverage: float) -> float:
    """The ceil((n+1)·coverage)-th smallest score (1.0, i.e. every label, when n is too small)."""
    n = len(scores)
    k = math.ceil((n + 1) * coverage)
    if n == 0 or k > n:
        return 1.0
    return float(np.partition(scores, k - 1)[k - 1])


def prediction_sets(proba: np.ndarray, threshold: float, order: np.ndarray | None = None) -> list[np.ndarray]:
    """Per row, the labels whose higher-ranked labels hold at most ``threshold`` of the probability, most
    probable first (the top label always: nothing is above it)."""
    order = _order(proba) if order is None else order
    sizes = (_mass_above(proba, order) <= threshold + 1e-9).sum(axis=1)  # a tolerance for float sums
    return [row[:size] for row, size in zip(order, sizes.tolist())]


def top1_threshold(proba: np.ndarray, y: np.ndarray, target: float, min_support: int = MIN_SUPPORT) -> float:
    """The top-1 threshold of :func:`top1_choice`."""
    return top1_choice(proba, y, target, min_support)[0]


def top1_choice(
    proba: np.ndarray, y: np.ndarray, target: float, min_support: int = MIN_SUPPORT
) -> tuple[float, float, bool]:
    """(threshold, the held-out top-1 precision above it, whether it meets ``target``): the lowest top-1
    probability above which top-1 precision is >= target on >= min_support rows; when none reaches it, the
    threshold of the best precision reachable on >= min_support rows (the largest such prefix among ties); with
    fewer than min_support rows, or when no threshold beats answering every row, 1.0 (never confident unless the
    model says 1.0) and nan."""
    top = proba.max(axis=1)
    right = proba.argmax(axis=1) == y
    order = np.argsort(-top, kind="stable")
    precision = np.cumsum(right[order]) / np.arange(1, len(y) + 1)
    supported = np.arange(1, len(y) + 1) >= min_support
    ok = np.flatnonzero((precision >= target) & supported)
    if len(ok):
        # the largest prefix meeting the target; ties in probability belong together, so the threshold is the
        # probability of the last row kept
        return float(top[order[ok[-1]]]), float(precision[ok[-1]]), True
    if not supported.any() or precision[supported].max() <= precision[-1]:
        return 1.0, float("nan"), False  # no threshold does better than answering every row: never confident
    best = np.flatnonzero(supported & (precision >= precision[supported].max() - 1e-12))[-1]
    return float(top[order[best]]), float(precision[best]), False


def risk_coverage(proba: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Selective classification curve: for each threshold (descending top-1 probability), the share of rows
    answered (coverage) and the top-1 error among them (risk)."""
    top = proba.max(axis=1)
    right = proba.argmax(axis=1) == y
    order = np.argsort(-top, kind="stable")
    answered = np.arange(1, len(y) + 1)
    return answered / len(y), 1.0 - np.cumsum(right[order]) / answered, top[order]


def cross_conformal(
    proba: np.ndarray, y: np.ndarray, coverage: float, target: float, folds: int = EVAL_FOLDS, seed: int = 0
) -> dict[str, float]:
    """Out-of-sample figures: each of ``folds`` parts is scored with thresholds calibrated on the others."""
    rng = np.random.default_rng(seed)
    part = rng.permutation(len(y)) % folds
    hit = np.zeros(len(y), dtype=bool)
    size = np.zeros(len(y))
    sure = np.zeros(len(y), dtype=bool)
    for f in range(folds):
        cal, test = part != f, part == f
        q = conformal_quantile(aps_scores(proba[cal], y[cal]), coverage)
        sets = prediction_sets(proba[test], q)
        hit[test] = [label in s for label, s in zip(y[test].tolist(), sets)]
        size[test] = [len(s) for s in sets]
        sure[test] = proba[test].max(axis=1) >= top1_threshold(proba[cal], y[cal], target)
    right = proba.argmax(axis=1) == y
    return {
        "empirical_coverage": float(hit.mean()),
        "mean_set_size": float(size.mean()),
        "confident_share": float(sure.mean()),
        "confident_precision": float(right[sure].mean()) if sure.any() else float("nan"),
    }


def calibrate(
    proba: np.ndarray,
    y: np.ndarray,
    coverage: float = DEFAULT_COVERAGE,
    target_precision: float = DEFAULT_TARGET_PRECISION,
    source: str = "out-of-fold",
    seed: int = 0,
) -> Confidence:
    """Thresholds from held-out probabilities ``proba`` (n, n_labels) and true label indices ``y``."""
    proba = np.asarray(proba, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if proba.ndim != 2 or len(proba) != len(y) or len(y) == 0:
        raise ValueError(f"need (n, n_labels) probabilities and n labels, got {proba.shape} and {y.shape}")
    if not 0 < coverage < 1 or not 0 < target_precision <= 1:
        raise ValueError(
            f"coverage must be in (0, 1) and target precision in (0, 1], got {coverage}, {target_precision}"
        )
    measured = cross_conformal(proba, y, coverage, target_precision, seed=seed)
    threshold, precision, met = top1_choice(proba, y, target_precision)
    return Confidence(
        coverage=coverage,
        set_threshold=conformal_quantile(aps_scores(proba, y), coverage),
        target_precision=target_precision,
        top1_threshold=threshold,
        target_met=met,
        threshold_precision=precision,
        n_calibration=len(y),
        source=source,
        **measured,
    )
