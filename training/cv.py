"""Stratified k-fold cross-validation with features fitted inside each fold (no leakage).

Rare labels: a label with fewer examples than folds cannot be stratified. Such labels are
stratified by their *area* instead (the fold assignment uses the pseudo-class "area (rare)"),
so their examples still spread over folds. A label whose only examples all fall in the test fold
is absent from that fold's training data: the model gives it probability 0 and the prediction
counts as a miss — the cross-validated figures are therefore honest for the long tail.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import StratifiedKFold

from papertrack.models.hierarchy import LabelSpace


@dataclass
class CVResult:
    oof_proba: np.ndarray  # (n, n_labels) out-of-fold probabilities
    fit_seconds: float  # total over folds
    predict_seconds: float  # total over folds
    folds: int

    @property
    def predict_ms_per_abstract(self) -> float:
        return 1000.0 * self.predict_seconds / len(self.oof_proba)


def check_trainable(labels: Sequence[str], folds: int, files: Sequence[str]) -> None:
    """UsageError (naming the files, the label and what to change) when cross-validation cannot run:
    fewer than 2 folds, fewer records than folds, or a single label."""
    from papertrack.errors import UsageError

    where = ", ".join(str(f) for f in files)
    if folds < 2:
        raise UsageError(f"--folds must be at least 2, got {folds}")
    if not labels:
        raise UsageError(f"{where}: no labels: no usable labeled record (the counts above say what was skipped)")
    if len(labels) < folds:
        raise UsageError(
            f"{where}: {len(labels):,} usable labeled record(s), fewer than --folds {folds}; "
            f"add labeled records or lower --folds (at least 2 records are needed)"
        )
    distinct = Counter(labels)
    if len(distinct) < 2:
        (only,) = distinct
        raise UsageError(
            f"{where}: every record has the label {only!r}; a classifier needs at least 2 different "
            f"labels — add records of other tracks"
        )


def stratification_groups(y: np.ndarray, space: LabelSpace, folds: int) -> np.ndarray:
    """The class used to stratify each row: its label, or its area when the label is too rare."""
    counts = Counter(y.tolist())
    rare_offset = space.n_labels
    return np.array([label if counts[label] >= folds else rare_offset + space.label_area[label] for label in y])


def fold_indices(y: np.ndarray, space: LabelSpace, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    groups = stratification_groups(y, space, folds)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        # An area with fewer rare examples than folds: StratifiedKFold still places them all.
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        return list(splitter.split(np.zeros(len(y)), groups))


def known_names_split(
    y: np.ndarray, space: LabelSpace, native: np.ndarray, folds: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """ "New names known": stratified k-fold over the ``native`` rows (a taxonomy's own papers) with every other
    row (older papers mapped in through a crosswalk) on the training side of every fold. Only native rows are
    ever scored (:func:`scored_rows`)."""
    native = np.asarray(native)
    others = np.setdiff1d(np.arange(len(y)), native)
    return [
        (np.sort(np.concatenate([others, native[train]])), native[test])
        for train, test in fold_indices(y[native], space, folds, seed)
    ]


def scored_rows(split: Sequence[tuple[np.ndarray, np.ndarray]], n: int) -> np.ndarray | None:
    """The rows some fold of ``split`` scores, sorted; None when that is every one of the ``n`` rows."""
    rows = np.unique(np.concatenate([test for _, test in split])) if split else np.arange(0)
    return None if len(rows) == n else rows


def cv_result(fits, outputs, n: int, n_labels: int) -> CVResult:
    """The CVResult of finished fold fits (:class:`papertrack.training.fits.Fit` and their outputs)."""
    oof = np.zeros((n, n_labels))
    for fit in fits:
        oof[fit.test] = outputs[fit.key].proba
    return CVResult(
        oof, sum(outputs[f.key].fit_seconds for f in fits), sum(outputs[f.key].predict_seconds for f in fits), len(fits)
    )
