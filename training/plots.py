"""Figures logged with every candidate run: confusion matrices, per-class F1, reliability.

Each is a :class:`matplotlib.figure.Figure` made without pyplot (no global figure registry, nothing to close):
the sweep has them drawn while the winner is refitted (:class:`papertrack.training.sweep_logging.SweepLogger`; in the
worker processes when the fits use them, :func:`png`)."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import numpy as np
from matplotlib.figure import Figure
from sklearn.metrics import confusion_matrix

from papertrack.training.scoring import reliability


def png(draw: Callable[..., Figure], *args) -> bytes:
    """The figure ``draw(*args)`` as PNG bytes, saved as MLflow's ``log_figure`` saves it (``savefig``'s defaults):
    a worker process can draw it and the run log it."""
    buffer = io.BytesIO()
    draw(*args).savefig(buffer, format="png")
    return buffer.getvalue()


def confusion_figure(y: np.ndarray, predicted: np.ndarray, names: Sequence[str], title: str):
    """Row-normalised confusion matrix (share of each true class predicted as each class)."""
    n = len(names)
    matrix = confusion_matrix(y, predicted, labels=np.arange(n)).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.nan_to_num(matrix / matrix.sum(axis=1, keepdims=True))
    size = max(9.0, 0.17 * n + 5)  # room for long "Area · Subarea" tick labels
    fig = Figure(figsize=(size, size), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(n), names, rotation=90, fontsize=6 if n > 20 else 9)
    ax.set_yticks(range(n), names, fontsize=6 if n > 20 else 9)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title)
    if n <= 20:
        for i in range(n):
            for j in range(n):
                if matrix[i, j]:
                    ax.text(
                        j,
                        i,
                        int(matrix[i, j]),
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if share[i, j] > 0.5 else "black",
                    )
    fig.colorbar(image, ax=ax, fraction=0.03, label="share of true class")
    return fig


def per_class_f1_figure(names: Sequence[str], f1: np.ndarray, support: np.ndarray, title: str):
    """Horizontal bars of F1 per class, sorted, with the support in the label."""
    order = np.argsort(f1)
    fig = Figure(figsize=(8, max(4.0, 0.17 * len(names) + 1.5)))
    ax = fig.add_subplot()
    ax.barh(range(len(names)), f1[order], color="tab:blue")
    ax.set_yticks(range(len(names)), [f"{names[i]} (n={support[i]})" for i in order], fontsize=6)
    ax.set_xlim(0, 1)
    ax.set_xlabel("F1 (cross-validated)")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def reliability_figure(proba: np.ndarray, y: np.ndarray, title: str, bins: int = 10):
    """Reliability diagram of the top-1 prediction, with the bin counts underneath."""
    r = reliability(proba, y, bins)
    centers = (r["edges"][:-1] + r["edges"][1:]) / 2
    fig = Figure(figsize=(5.5, 6))
    ax, counts = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], "--", color="grey", label="perfect calibration")
    filled = r["count"] > 0
    ax.plot(r["confidence"][filled], r["accuracy"][filled], "o-", label="model")
    ax.set_ylabel("accuracy of top-1")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left")
    ax.set_title(title)
    counts.bar(centers, r["count"], width=1 / bins * 0.9, color="tab:grey")
    counts.set_xlabel("top-1 confidence")
    counts.set_ylabel("rows")
    counts.set_xlim(0, 1)
    fig.tight_layout()
    return fig
