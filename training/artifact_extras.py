"""What the prediction artifact carries beyond its classifier, attached when the winner is refit:

* the confidence calibration (:mod:`papertrack.models.confidence`) from the held-out probabilities the
  winner was selected on (the temporal holdout when the data spans several years — the latest year's rows,
  as predicted by the model trained on the earlier ones —, else the shift holdout with several sources,
  else out-of-fold), logged to the winner's MLflow run (:func:`log_calibration`): its metrics (nominal and
  empirical coverage of the prediction sets, mean set size, the confident threshold, its share and precision),
  ``confidence/calibration.json`` and the figure ``plots/risk_coverage.png``;
* the nearest-neighbour index of the labeled training abstracts (:mod:`papertrack.models.neighbors`).

The sweep calls :func:`attach` once, before the artifact is saved, and logs the calibration to the winner's run.
"""

from __future__ import annotations

import numpy as np

from papertrack.models.confidence import calibrate, cross_conformal, risk_coverage
from papertrack.models.neighbors import NeighborIndex
from papertrack.training.data import TrainingSet

COVERAGE_TOLERANCE = 0.02  # the empirical coverage should be within this of the nominal one


def attach(
    predictor,
    held_out_proba: np.ndarray,
    held_out_y: np.ndarray,
    data: TrainingSet,
    source: str = "out-of-fold",
    neighbors: NeighborIndex | None = None,
):
    """Calibrate ``predictor`` on ``held_out_proba`` (true labels ``held_out_y``; ``source`` names them:
    "temporal holdout", "shift holdout" or "out-of-fold") and give it the neighbour index of ``data`` (``neighbors``
    when it was built already: :func:`neighbor_index`). Returns the calibration (:func:`log_calibration` logs it,
    :func:`describe` says it in one line)."""
    confidence = calibrate(held_out_proba, held_out_y, source=source)
    predictor.confidence = confidence
    predictor.neighbors = neighbors if neighbors is not None else neighbor_index(data)
    return confidence


def neighbor_index(data: TrainingSet) -> NeighborIndex:
    """The neighbour index of ``data``'s papers (it reads their texts and labels only)."""
    records = data.records
    return NeighborIndex.build(
        [r.abstract for r in records], [r.id for r in records], [r.title for r in records], data.labels
    )


def log_calibration(
    run, confidence, held_out_proba: np.ndarray, held_out_y: np.ndarray, taxonomy: str = "", plot: bool = True
) -> None:
    """The calibration's metrics, ``confidence/calibration.json`` and (``plot``) ``plots/risk_coverage.png``, logged
    to ``run`` (a :class:`papertrack.training.run_log.RunLog`; ``taxonomy``: another taxonomy's, its slug
    suffixed to the metric and file names)."""
    suffix = f".{taxonomy}" if taxonomy else ""
    run.metrics({f"{k}{suffix}": v for k, v in confidence.metrics().items()})
    run.dict(confidence.to_dict(), f"confidence/calibration{suffix}.json")
    if plot:
        run.figure(risk_coverage_figure(held_out_proba, held_out_y, confidence), f"plots/risk_coverage{suffix}.png")


def describe(confidence, source: str) -> tuple[str, str]:
    """(one line about the calibration, a warning to append when the coverage is off nominal, else "")."""
    off = abs(confidence.empirical_coverage - confidence.coverage)
    message = (
        f"Prediction sets: {confidence.empirical_coverage:.3f} empirical coverage on {source} rows "
        f"(nominal {confidence.coverage:.2f}, mean size {confidence.mean_set_size:.1f}); "
        + confident_sentence(confidence)
    )
    return message, (f"— coverage is {off:.3f} away from nominal" if off > COVERAGE_TOLERANCE else "")


def confident_sentence(confidence) -> str:
    """What ``confident`` means for this calibration, in plain words (never "nan")."""
    share, precision = confidence.confident_share, confidence.confident_precision
    measured = (
        f"{share:.0%} of held-out rows, top-1 precision {precision:.3f} on them"
        if precision == precision
        else "no held-out row reached it"
    )
    if getattr(confidence, "target_met", True):
        return (
            f"confident when top-1 >= {confidence.top1_threshold:.3f} ({measured}; target "
            f"{confidence.target_precision:.2f})"
        )
    reached = getattr(confidence, "threshold_precision", float("nan"))
    if reached != reached:
        return (
            f"never confident: too few held-out rows to choose a threshold (target {confidence.target_precision:.2f})"
        )
    return (
        f"no threshold reaches top-1 precision {confidence.target_precision:.2f} here; confident when top-1 >= "
        f"{confidence.top1_threshold:.3f}, the best reachable (precision {reached:.3f}; {measured})"
    )


def risk_coverage_figure(proba: np.ndarray, y: np.ndarray, confidence):
    """Left: top-1 risk against the share of abstracts answered as the top-1 threshold falls, with the
    confident threshold marked. Right: cross-conformal coverage of the prediction sets against nominal."""
    from matplotlib.figure import Figure

    share, risk, _ = risk_coverage(proba, y)
    fig = Figure(figsize=(11, 4.6))
    left, right = fig.subplots(1, 2)
    left.plot(share, risk, color="tab:blue", label="top-1 risk (1 - precision)")
    left.axhline(
        1 - confidence.target_precision,
        ls="--",
        color="grey",
        label=f"target risk {1 - confidence.target_precision:.2f}",
    )
    if np.isfinite(confidence.confident_share):
        left.axvline(
            confidence.confident_share,
            ls=":",
            color="tab:green",
            label=f"confident: top-1 ≥ {confidence.top1_threshold:.2f} ({confidence.confident_share:.0%})",
        )
    left.set_xlabel("coverage (share of abstracts answered)")
    left.set_ylabel("risk (top-1 error among them)")
    left.set_xlim(0, 1)
    left.set_ylim(0, 1)
    left.set_title(f"risk-coverage ({confidence.source}, n={len(y)})")
    left.legend(loc="upper left", fontsize=8)
    nominal = np.array([0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98])
    measured = [cross_conformal(proba, y, c, confidence.target_precision) for c in nominal]
    right.plot([0.5, 1], [0.5, 1], "--", color="grey", label="nominal")
    right.plot(
        nominal,
        [m["empirical_coverage"] for m in measured],
        "o-",
        color="tab:orange",
        label="empirical (cross-conformal)",
    )
    for c, m in zip(nominal, measured):
        right.annotate(
            f"{m['mean_set_size']:.1f}",
            (c, m["empirical_coverage"]),
            textcoords="offset points",
            xytext=(4, -10),
            fontsize=7,
        )
    right.set_xlabel("nominal coverage of the prediction sets")
    right.set_ylabel("share of true labels in the set")
    right.set_title("prediction sets (labels: mean set size)")
    right.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig
