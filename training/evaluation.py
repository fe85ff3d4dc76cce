"""The sweep's evaluation as a pure function: candidates + data + folds -> results.

:func:`evaluate_candidates` cross-validates every single candidate (features fitted inside each
fold) and evaluates every ensemble on its members' out-of-fold probabilities (weights chosen with
nested cross-validation, see :mod:`papertrack.training.ensemble`). It logs nothing and prints
nothing: an optional :class:`Listener` hears about progress and finished candidates (the sweep logs
each one to MLflow and prints a line; the benchmarks pass none).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from papertrack.models.candidates import Candidate
from papertrack.models.ensemble import with_weights
from papertrack.training.cv import CVResult, cross_validate
from papertrack.training.data import TrainingSet
from papertrack.training.ensemble import cross_validate_ensemble
from papertrack.training.metrics import evaluate

Split = Sequence[tuple[np.ndarray, np.ndarray]]
INSAMPLE_METRICS = ("label_top3", "label_top1", "label_macro_f1", "area_top1")  # of an ensemble's refit weights


@dataclass
class CandidateResult:
    candidate: Candidate  # for an ensemble: with the weights chosen on all rows (what the refit uses)
    metrics: dict[str, float]
    cv: CVResult = field(repr=False)
    extra_params: dict[str, str] = field(default_factory=dict)  # e.g. an ensemble's chosen weights
    member_weights: dict[str, float] = field(default_factory=dict)  # an ensemble's refit weights, by member
    run_id: str = ""  # set by the sweep once the result is logged to MLflow


class Listener:
    """What :func:`evaluate_candidates` reports while it runs; every method is optional."""

    def started(self, total_folds: int) -> None: ...

    def candidate_started(self, candidate: Candidate) -> None: ...

    def fold_done(self, candidate: Candidate) -> None: ...

    def candidate_done(self, result: CandidateResult) -> None: ...


def evaluate_candidates(candidates: Sequence[Candidate], data: TrainingSet, split: Split, seed: int,
                        listener: Listener | None = None) -> list[CandidateResult]:
    """Results of every candidate, in order: singles first (cross-validated on ``split``), then
    ensembles (evaluated on their members' out-of-fold matrices; every member must be among the
    singles)."""
    listener = listener or Listener()
    singles = [c for c in candidates if not c.is_ensemble]
    ensembles = [c for c in candidates if c.is_ensemble]
    listener.started(len(singles) * len(split))
    results = []
    for candidate in singles:
        listener.candidate_started(candidate)
        cv = cross_validate(lambda c=candidate: c.build(data.space.n_labels, seed), data.texts, data.y, data.space,
                            split, on_fold=lambda _, c=candidate: listener.fold_done(c))
        metrics = evaluate(cv.oof_proba, data.y, data.space)
        metrics.update(fit_seconds=cv.fit_seconds / cv.folds, predict_ms_per_abstract=cv.predict_ms_per_abstract)
        results.append(CandidateResult(candidate, metrics, cv))
        listener.candidate_done(results[-1])
    by_name = {r.candidate.name: r for r in results}
    for candidate in ensembles:
        listener.candidate_started(candidate)
        results.append(_evaluate_ensemble(candidate, by_name, data, split))
        listener.candidate_done(results[-1])
    return results


def _evaluate_ensemble(candidate: Candidate, singles: dict[str, CandidateResult], data: TrainingSet,
                       split: Split) -> CandidateResult:
    """Weights chosen (nested) on the members' OOF matrices — no member is refit."""
    members = list(candidate.members)
    member_results = [singles[m] for m in members]
    started = time.perf_counter()
    ens = cross_validate_ensemble(candidate, {m: singles[m].cv.oof_proba for m in members}, data.y, split)
    search_seconds = time.perf_counter() - started
    used = [r for r, w in zip(member_results, ens.weights) if w > 0]
    metrics = evaluate(ens.oof_proba, data.y, data.space)
    metrics.update(
        # what the refit ensemble costs: its members' fits and predictions (an upper bound for
        # prediction: members with identical feature steps share one transform)
        fit_seconds=sum(r.metrics["fit_seconds"] for r in used),
        predict_ms_per_abstract=sum(r.metrics["predict_ms_per_abstract"] for r in used),
        weight_search_seconds=search_seconds,
        **{f"insample_{k}": v for k, v in evaluate(ens.insample_proba, data.y, data.space).items()
           if k in INSAMPLE_METRICS},
    )
    weights = {m: round(float(w), 4) for m, w in zip(members, ens.weights)}
    extra = {"weights": ", ".join(f"{m}={w:g}" for m, w in weights.items()),
             **{f"fold{i}_weights": ", ".join(f"{w:g}" for w in np.round(fw, 4))
                for i, fw in enumerate(ens.fold_weights)}}
    cv = CVResult(ens.oof_proba, sum(r.cv.fit_seconds for r in used), sum(r.cv.predict_seconds for r in used),
                  len(split))
    return CandidateResult(with_weights(candidate, ens.weights), metrics, cv, extra, weights)
