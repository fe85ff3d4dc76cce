"""Choosing ensemble weights on the members' out-of-fold probabilities, and evaluating them honestly.

The sweep already holds every member's out-of-fold (OOF) probability matrix; ensembles reuse them
instead of refitting members.

- :func:`select_weights`: greedy forward selection with replacement (Caruana et al., 2004) over the
  members' OOF matrices: start from the best member, then repeatedly add the member whose extra
  weight improves the objective most (``steps`` additions, so weights are multiples of 1/steps;
  members never picked get weight 0).
- :func:`nested_cv`: the ensemble's cross-validated figures. For each outer fold k, weights are
  chosen on the OOF rows of the *other* folds only and applied to fold k's rows. Every row's
  ensemble probability therefore comes from weights that never saw its label, and from members
  that never saw it either (the members' OOF rows of fold k come from models not trained on fold k).
  The only optimism left is second order: the members' OOF rows of the other folds, on which the
  weights are chosen, come from models that were trained with fold k among their data.
- The weights used for the refit are chosen on all OOF rows; their (optimistic, in-sample) score
  is logged separately as ``insample_*`` and never used for ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from papertrack.models.ensemble import combine, combine_logs, floored_log
from papertrack.training.scoring import log_loss, macro_f1, top_k_accuracy

OBJECTIVES = ("top3+f1", "log_loss")


def score(proba: np.ndarray, y: np.ndarray, objective: str = "top3+f1") -> float:
    """Higher is better. ``top3+f1``: label top-3 accuracy + label macro-F1 (the two ranking metrics,
    summed so that a large macro-F1 gain can pay for a tiny top-3 loss); ``log_loss``: its negative."""
    if objective == "top3+f1":
        return top_k_accuracy(proba, y, 3) + macro_f1(y, proba.argmax(axis=1))
    if objective == "log_loss":
        return -log_loss(proba, y)
    raise ValueError(f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}")


def select_weights(
    probas: Sequence[np.ndarray], y: np.ndarray, rule: str = "mean", steps: int = 20, objective: str = "top3+f1"
) -> np.ndarray:
    """Member weights (summing to 1) chosen by greedy forward selection with replacement."""
    m = len(probas)
    if m == 0:
        raise ValueError("an ensemble needs at least one member")
    counts = np.zeros(m)
    counts[int(np.argmax([score(p, y, objective) for p in probas]))] = 1
    logs = [floored_log(p) for p in probas] if rule == "geometric" else None  # once, not once per trial
    for _ in range(steps - 1):
        best, best_score = None, -np.inf
        for j in range(m):
            trial = counts.copy()
            trial[j] += 1
            s = score(combine_logs(logs, trial) if logs else combine(probas, trial, rule), y, objective)
            if s > best_score + 1e-12:
                best, best_score = j, s
        counts[best] += 1
    return counts / counts.sum()


@dataclass
class EnsembleCV:
    oof_proba: np.ndarray  # (n, n_labels): nested, honest out-of-fold ensemble probabilities
    weights: np.ndarray  # chosen on all OOF rows: the weights of the refit model
    fold_weights: list[np.ndarray] = field(repr=False)  # chosen without each outer fold
    insample_proba: np.ndarray = field(repr=False)  # ``weights`` applied to all OOF rows (optimistic)


def nested_cv(
    probas: Sequence[np.ndarray],
    y: np.ndarray,
    folds: Sequence[tuple[np.ndarray, np.ndarray]],
    rule: str = "mean",
    steps: int = 20,
    objective: str = "top3+f1",
) -> EnsembleCV:
    """Honest OOF probabilities of the ensemble (weights chosen without each fold), plus the weights
    chosen on all rows for the refit."""
    n = len(y)
    if any(p.shape != probas[0].shape or p.shape[0] != n for p in probas):
        raise ValueError("every member's OOF matrix must have the same shape (n rows, n_labels)")
    oof = np.zeros_like(probas[0], dtype=np.float64)
    fold_weights = []
    # rows no fold scores (a "new names known" split: older papers always on the training side) have no
    # out-of-fold probabilities: weights are chosen on the scored rows only
    scored = np.unique(np.concatenate([test for _, test in folds])) if folds else np.arange(n)
    for train, test in folds:
        train = np.intersect1d(train, scored)
        w = select_weights([p[train] for p in probas], y[train], rule, steps, objective)
        oof[test] = combine([p[test] for p in probas], w, rule)
        fold_weights.append(w)
    weights = select_weights([p[scored] for p in probas], y[scored], rule, steps, objective)
    insample = np.zeros_like(oof)
    insample[scored] = combine([p[scored] for p in probas], weights, rule)
    return EnsembleCV(oof, weights, fold_weights, insample)


def cross_validate_ensemble(
    candidate, member_oof: dict[str, np.ndarray], y: np.ndarray, folds: Sequence[tuple[np.ndarray, np.ndarray]]
) -> EnsembleCV:
    """:func:`nested_cv` of an ensemble candidate (its declared members, rule, steps and objective) on
    its members' OOF matrices, given by member name."""
    spec = candidate.ensemble
    return nested_cv(
        [member_oof[m] for m in spec.members], y, folds, rule=spec.rule, steps=spec.steps, objective=spec.objective
    )
