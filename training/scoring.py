"""Evaluation metrics at label and area level, from a probability matrix over the label space.

Top-k accuracy and log-loss are not scikit-learn's ``top_k_accuracy_score`` / ``log_loss``: those give the same
numbers except on ties and zero probabilities, which the sweep's models do produce (a label absent from a fold's
training data gets exactly 0). A tie goes here to the lower label index, as ``argmax`` does for the prediction
macro-F1 scores (scikit-learn ranks the higher index first), and a true label with probability 0 costs
``-log(1e-15)`` (scikit-learn clips at the float64 epsilon, with no ``eps`` parameter since 1.5).
``tests/training/test_metrics.py`` checks both against scikit-learn."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import f1_score

from papertrack.models.hierarchy import LabelSpace


def top_k_accuracy(proba: np.ndarray, y: np.ndarray, k: int) -> float:
    """Share of rows whose true class is among the k highest probabilities (ties broken by index: the true
    class's rank is the number of classes above it plus the tied ones of lower index — what a stable sort of the
    probabilities, highest first, gives, without sorting; the ensemble weight search calls this ~500 times)."""
    if len(y) == 0:
        raise ValueError("no rows to evaluate")
    y = np.asarray(y)
    truth = proba[np.arange(len(y)), y][:, None]
    lower_index = np.arange(proba.shape[1])[None, :] < y[:, None]
    rank = (proba > truth).sum(axis=1) + ((proba == truth) & lower_index).sum(axis=1)
    return float(np.mean(rank < k))


def macro_f1(y: np.ndarray, predicted: np.ndarray) -> float:
    """Macro-F1 over the classes present in the truth or the predictions (scikit-learn's ``f1_score(...,
    average="macro")``, counted with ``bincount``: the same number without its input checks, which cost more than
    the count in the ensemble weight search)."""
    y, predicted = np.asarray(y), np.asarray(predicted)
    if y.dtype.kind not in "iu" or predicted.dtype.kind not in "iu" or len(y) == 0:
        return float(f1_score(y, predicted, average="macro", zero_division=0))
    n = int(max(y.max(), predicted.max())) + 1
    true_positive = np.bincount(y[y == predicted], minlength=n)
    in_truth, in_predicted = np.bincount(y, minlength=n), np.bincount(predicted, minlength=n)
    present = (in_truth + in_predicted) > 0
    f1 = 2 * true_positive[present] / (in_truth[present] + in_predicted[present])
    return float(f1.mean())


def log_loss(proba: np.ndarray, y: np.ndarray, eps: float = 1e-15) -> float:
    """Mean negative log-probability of the true class (probabilities clipped at eps)."""
    picked = proba[np.arange(len(y)), y]
    return float(-np.mean(np.log(np.clip(picked, eps, 1.0))))


def reliability(proba: np.ndarray, y: np.ndarray, bins: int = 10) -> dict[str, np.ndarray]:
    """Top-1 confidence vs accuracy per equal-width confidence bin."""
    confidence = proba.max(axis=1)
    correct = (proba.argmax(axis=1) == y).astype(float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1], right=True), 0, bins - 1)
    count = np.bincount(which, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(which, confidence, minlength=bins) / count
        accuracy = np.bincount(which, correct, minlength=bins) / count
    return {"edges": edges, "count": count, "confidence": mean_conf, "accuracy": accuracy}


def expected_calibration_error(proba: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Sum over bins of (bin share) * |accuracy - confidence| for the top-1 prediction."""
    r = reliability(proba, y, bins)
    filled = r["count"] > 0
    weights = r["count"][filled] / r["count"].sum()
    return float(np.sum(weights * np.abs(r["accuracy"][filled] - r["confidence"][filled])))


def evaluate(proba: np.ndarray, y: np.ndarray, space: LabelSpace) -> dict[str, float]:
    """All quality metrics of a candidate: label and area level."""
    area_proba = space.area_proba(proba)
    y_area = space.area_of(y)
    return {
        "label_top1": top_k_accuracy(proba, y, 1),
        "label_top3": top_k_accuracy(proba, y, 3),
        "label_macro_f1": macro_f1(y, proba.argmax(axis=1)),
        "area_top1": top_k_accuracy(area_proba, y_area, 1),
        "area_macro_f1": macro_f1(y_area, area_proba.argmax(axis=1)),
        "log_loss": log_loss(proba, y),
        "ece": expected_calibration_error(proba, y),
    }
