"""What the sweep's evaluation gives back: a candidate's results (:class:`CandidateResult`, with a holdout's
:class:`ShiftResult`), the :class:`Listener` that hears about them as they finish, and the metric names each
evaluation logs (``cv_``, ``insample_``, ``shift_``, ``temporal_``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from papertrack.models.candidates import Candidate
from papertrack.training.cv import CVResult

INSAMPLE_METRICS = ("label_top3", "label_top1", "label_macro_f1", "area_top1")  # logged as insample_<name>
SHIFT_METRICS = ("label_top3", "label_top1", "area_top1", "label_macro_f1")  # logged as shift_/temporal_<name>


@dataclass
class ShiftResult:
    proba: np.ndarray  # (n, n_labels): each row predicted by the model trained without its source
    directions: dict[str, dict[str, float]]  # direction name -> metrics on its held-out source
    fit_seconds: float
    inner_oof: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # direction -> training-side OOF
    weights: dict[str, list[float]] = field(default_factory=dict)  # an ensemble's weights per direction
    rows: np.ndarray | None = field(default=None, repr=False)  # the rows held out (None: every row)

    def held_out(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(probabilities, true labels) of the held-out rows."""
        return (self.proba, y) if self.rows is None else (self.proba[self.rows], y[self.rows])


@dataclass
class CandidateResult:
    candidate: Candidate  # for an ensemble: with the weights chosen on all rows (what the refit uses)
    metrics: dict[str, float]
    cv: CVResult = field(repr=False)
    extra_params: dict[str, str] = field(default_factory=dict)  # e.g. an ensemble's chosen weights
    member_weights: dict[str, float] = field(default_factory=dict)  # an ensemble's refit weights, by member
    shift: ShiftResult | None = field(default=None, repr=False)
    y: np.ndarray | None = field(default=None, repr=False)  # true label of every training row
    run_id: str = ""  # set by the sweep once the result is logged to MLflow
    temporal: ShiftResult | None = field(default=None, repr=False)
    # the same candidate evaluated in each other taxonomy the sweep answers in (training.taxonomies), by name
    heads: dict[str, CandidateResult] = field(default_factory=dict, repr=False)
    # a crosswalked taxonomy's result: the share of the native model in the refit (training.native_mixture)
    native_share: float = 0.0
    # the extra texts of the evaluation (the other taxonomies' own papers) answered in this taxonomy's names, for
    # the heads' layers (training.head_layer): "cv" — the mean of the k folds' models; empty without extra texts
    extra_proba: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    # a head evaluated on the main taxonomy's members (training.head_layer): each member's layer fitted on every row
    # of the head's training set, by member name (what the refit uses)
    layers: dict[str, object] = field(default_factory=dict, repr=False)

    @property
    def selection(self) -> str:
        """Which held-out rows the champion is chosen on: "temporal holdout", "shift holdout" or "out-of-fold"."""
        if self.temporal is not None:
            return "temporal holdout"
        return "shift holdout" if self.shift is not None else "out-of-fold"

    @property
    def selection_proba(self) -> np.ndarray:
        """The held-out probabilities the champion was chosen on (rows aligned with ``selection_y``):
        the temporal holdout's (latest year's rows) when there is one, else the shift holdout's, else the
        cross-validated out-of-fold ones."""
        if self.temporal is not None:
            return self.temporal.held_out(self.y)[0]
        return self.shift.proba if self.shift is not None else self.cv.oof_proba

    @property
    def selection_y(self) -> np.ndarray:
        """The true labels of the ``selection_proba`` rows."""
        return self.temporal.held_out(self.y)[1] if self.temporal is not None else self.y

    def selection_hits(self, k: int = 3) -> np.ndarray:
        """Per row: 1.0 when the true label is among the top k of ``selection_proba`` — followed by the rows of
        every other taxonomy's selection holdout (each in its own names), so that the champion rule's paired
        comparison covers every taxonomy's papers."""
        top = np.argsort(-self.selection_proba, axis=1, kind="stable")[:, :k]
        own = np.any(top == self.selection_y[:, None], axis=1).astype(np.float64)
        return np.concatenate([own, *(head.selection_hits(k) for head in self.heads.values())])


class Listener:
    """What :func:`evaluate_candidates` reports while it runs; every method is optional."""

    def started(self, total_fits: int) -> None: ...

    def candidate_started(self, candidate: Candidate) -> None: ...

    def fold_done(self, candidate: Candidate) -> None: ...

    def phase(self, description: str) -> None: ...  # a stretch of work with no candidate's progress of its own

    def candidate_done(self, result: CandidateResult) -> None: ...


def shift_metrics(shift: ShiftResult, prefix: str = "shift") -> dict[str, float]:
    """``shift_<metric>`` (mean over directions) and ``shift_<metric>.<direction>`` (with several)."""
    out = {f"{prefix}_{m}": float(np.mean([d[m] for d in shift.directions.values()])) for m in SHIFT_METRICS}
    if len(shift.directions) > 1:
        for name, metrics in shift.directions.items():
            out.update({f"{prefix}_{m}.{name}": metrics[m] for m in SHIFT_METRICS})
    return out


def temporal_metrics(temporal: ShiftResult) -> dict[str, float]:
    """``temporal_<metric>``: trained on the earlier years, tested on the latest."""
    return shift_metrics(temporal, "temporal")


def cv_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """``cv_<metric>``: :func:`~papertrack.training.scoring.evaluate`'s metrics of out-of-fold probabilities."""
    return {f"cv_{k}": v for k, v in metrics.items()}


def insample_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """``insample_<metric>`` (:data:`INSAMPLE_METRICS`) of :func:`~papertrack.training.scoring.evaluate`'s metrics."""
    return {f"insample_{k}": metrics[k] for k in INSAMPLE_METRICS}
