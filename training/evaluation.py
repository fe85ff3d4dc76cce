"""The sweep's evaluation as a pure function: candidates + data + folds (+ shift directions) -> results.

:func:`evaluate_candidates` cross-validates every single candidate (features fitted inside each
fold) and evaluates every ensemble on its members' out-of-fold probabilities (weights chosen with
nested cross-validation, see :mod:`papertrack.training.ensemble_weights`).

With a ``temporal`` direction (:func:`papertrack.training.data.temporal_direction`: train on the
earlier years, test on the latest) and with shift ``directions`` (leave one source out,
:func:`papertrack.training.data.shift_directions`) every candidate is also fitted on the training side
of each direction and scored on its held-out rows. Everything fitted there sees the training side only:
a fresh model per direction (TF-IDF
vocabulary and IDF, scalers, classifier); an ensemble's weights are chosen on its members'
out-of-fold probabilities from an inner cross-validation *of the training side*. No candidate
reads unlabeled text. ``selection_proba`` (the temporal holdout's probabilities on the latest year's
rows; without one, the shift holdout's, each row from the direction that held it out; the out-of-fold
ones with a single source) is what the champion rule and calibration work from.

Metric names say which evaluation they come from: ``cv_<metric>`` (out-of-fold, and ``cv_fit_seconds`` per
fold), ``temporal_<metric>`` and ``shift_<metric>`` (the holdouts, ``shift_<metric>.<direction>`` per
direction with several), ``insample_<metric>`` (the final configuration scored on the rows its choices were
made on: an ensemble's refit weights on all out-of-fold rows, optimistic and never ranked; a single candidate
chooses nothing on them, so its in-sample figures are its cross-validated ones), and the cost
``predict_ms_per_abstract``.

It logs nothing and prints nothing: an optional :class:`Listener` hears about progress and finished
candidates (the sweep logs each one to MLflow and prints a line; the benchmarks pass none).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from papertrack.models.candidates import Candidate
from papertrack.models.ensemble import combine, with_weights
from papertrack.training.cv import CVResult, cv_result, fold_indices, scored_rows
from papertrack.training.data import Direction, TrainingSet
from papertrack.training.ensemble_weights import cross_validate_ensemble, select_weights
from papertrack.training.fits import Fit, run_fits, run_shared_fits
from papertrack.training.results import (
    SHIFT_METRICS,
    CandidateResult,
    Listener,
    ShiftResult,
    cv_metrics,
    insample_metrics,
    shift_metrics,
    temporal_metrics,
)
from papertrack.training.scoring import evaluate

Split = Sequence[tuple[np.ndarray, np.ndarray]]
INNER_FOLDS = 3  # inner cross-validation of a direction's training side (ensemble members only)
COST_SAMPLE = 64  # abstracts encoded to measure what embedding a new abstract costs


def evaluate_candidates(
    candidates: Sequence[Candidate],
    data: TrainingSet,
    split: Split,
    seed: int,
    listener: Listener | None = None,
    directions: Sequence[Direction] = (),
    temporal: Direction | None = None,
    n_jobs: int = 1,
    extra: Sequence[str] = (),
) -> list[CandidateResult]:
    """Results of every candidate, in order: singles first (cross-validated on ``split`` and, with
    ``temporal`` and ``directions``, fitted on each direction's training side; ``n_jobs`` fits at a time),
    then ensembles (evaluated on their members' held-out probabilities; every member must be among the
    singles). With ``extra`` texts, every single's fold models also answer them (``CandidateResult.extra_proba``:
    what the other taxonomies' layers read, training.head_layer)."""
    listener = listener or Listener()
    singles = [c for c in candidates if not c.is_ensemble]
    ensembles = [c for c in candidates if c.is_ensemble]
    members = {m for c in ensembles for m in c.members}
    holdouts = len(directions) + (temporal is not None)
    inner = INNER_FOLDS * holdouts
    listener.started(sum(len(split) + holdouts + (inner if c.name in members else 0) for c in singles))
    encode_ms: dict[str, float] = {}
    by_name: dict[str, CandidateResult] = {}
    for group in sharing_features(singles, data, seed):
        planned = {
            c.name: SingleFits(data, split, seed, temporal, directions, c.name in members, bool(extra)) for c in group
        }
        listener.candidate_started(group[0])
        if len(group) == 1:
            (candidate,) = group
            outputs = {
                candidate.name: run_fits(
                    lambda c=candidate: c.build(data.space.n_labels, seed),
                    data.texts,
                    data.y,
                    planned[candidate.name].fits,
                    # embedding candidates stay in this process: its embedder holds the model and the cache
                    1 if _needs_embeddings(candidate) else n_jobs,
                    lambda f, c=candidate: listener.fold_done(c),
                    extra,
                )
            }
        else:  # one TF-IDF fit per fold for the group (fits.run_shared_fits)
            named = {c.name: c for c in group}
            outputs = run_shared_fits(
                {c.name: (lambda c=c: c.build(data.space.n_labels, seed)) for c in group},
                data.texts,
                data.y,
                {name: plan.fits for name, plan in planned.items()},
                n_jobs,
                lambda name, f, named=named: listener.fold_done(named[name]),
                extra,
            )
        for candidate in group:
            result = planned[candidate.name].result(candidate, outputs[candidate.name], encode_ms)
            by_name[candidate.name] = result
            listener.candidate_done(result)
    results = [by_name[c.name] for c in singles]
    for candidate in ensembles:
        listener.candidate_started(candidate)
        results.append(evaluate_ensemble(candidate, by_name, data, split, directions, temporal))
        listener.candidate_done(results[-1])
    return results


def _backends(candidate: Candidate, data: TrainingSet, seed: int) -> set[str]:
    from papertrack.features.embeddings import embedding_steps

    return {step.backend for step in embedding_steps(candidate.build(data.space.n_labels, seed))}


def _encode_cost(backend: str, data: TrainingSet, cache: dict[str, float]) -> float:
    from papertrack.features.embeddings import encode_ms_per_abstract

    if backend not in cache:
        cache[backend] = encode_ms_per_abstract(backend, data.texts[:COST_SAMPLE])
    return cache[backend]


def _needs_embeddings(candidate: Candidate) -> bool:
    from papertrack.models.embedding_candidates import needs_embeddings

    return needs_embeddings(candidate)


def sharing_features(singles: Sequence[Candidate], data: TrainingSet, seed: int) -> list[list[Candidate]]:
    """The single candidates in groups fitted together: TF-IDF models with identical feature steps share one
    group (in order of their first member); every other candidate is a group of its own."""
    from papertrack.models.ensemble import feature_signature
    from papertrack.models.estimators import TextClassifier

    groups: dict[str, list[Candidate]] = {}
    for i, candidate in enumerate(singles):
        key = f"own-{i}"
        if not _needs_embeddings(candidate):
            model = candidate.build(data.space.n_labels, seed)
            if type(model) is TextClassifier:
                key = feature_signature(model.features)
        groups.setdefault(key, []).append(candidate)
    return list(groups.values())


class SingleFits:
    """The fits of one single candidate (its cross-validation folds and holdouts, and with ``inner`` the inner
    folds of each holdout's training side) and its result from their outputs."""

    def __init__(
        self,
        data: TrainingSet,
        split: Split,
        seed: int,
        temporal: Direction | None,
        directions: Sequence[Direction],
        inner: bool,
        extra: bool = False,
    ):
        self.data, self.split = data, split
        self.cv_fits = [Fit(("cv", i), train, test, extra) for i, (train, test) in enumerate(split)]
        self.groups = {"temporal": [temporal] if temporal is not None else [], "shift": list(directions)}
        self.holdout_fits = {group: _holdout_fits(data, ds, seed, inner, group) for group, ds in self.groups.items()}
        self.fits = [*self.cv_fits, *(f for group_fits, _ in self.holdout_fits.values() for f in group_fits)]
        self.seed = seed

    def result(self, candidate: Candidate, outputs: dict, encode_ms: dict[str, float]) -> CandidateResult:
        data, split = self.data, self.split
        cv = cv_result(self.cv_fits, outputs, len(data.y), data.space.n_labels)
        scores = _scored(cv.oof_proba, data, split)
        metrics = cv_metrics(scores)
        embedding_ms = sum(_encode_cost(b, data, encode_ms) for b in _backends(candidate, data, self.seed))
        metrics.update(
            cv_fit_seconds=cv.fit_seconds / cv.folds, predict_ms_per_abstract=cv.predict_ms_per_abstract + embedding_ms
        )
        metrics.update(insample_metrics(scores))  # nothing is chosen on the out-of-fold rows: the CV figures
        if embedding_ms:
            metrics["embedding_ms_per_abstract"] = embedding_ms
        shift = later = None
        temporal, directions = self.groups["temporal"], self.groups["shift"]
        if temporal:
            later = _holdout_result(data, temporal, outputs, "temporal", self.holdout_fits["temporal"][1])
            metrics.update(temporal_metrics(later), temporal_fit_seconds=later.fit_seconds)
        if directions:
            shift = _holdout_result(data, directions, outputs, "shift", self.holdout_fits["shift"][1])
            metrics.update(shift_metrics(shift), shift_fit_seconds=shift.fit_seconds / len(directions))
        result = CandidateResult(candidate, metrics, cv, shift=shift, y=data.y, temporal=later)
        extras = [outputs[f.key].extra_proba for f in self.cv_fits if f.extra]
        result.extra_proba = {"cv": np.mean(extras, axis=0)} if extras else {}
        return result


def _holdout_fits(
    data: TrainingSet, directions: Sequence[Direction], seed: int, inner: bool, group: str
) -> tuple[list[Fit], dict[str, list[tuple[np.ndarray, np.ndarray]]]]:
    """Per direction: the fit of its training side (scored on its held-out rows) and, with ``inner``, the
    inner folds of that training side (for ensemble weights); and the inner splits (positions within the
    training side)."""
    fits, inner_splits = [], {}
    for d in directions:
        fits.append(Fit((group, d.name), d.train, d.test))
        if inner:
            inner_splits[d.name] = fold_indices(data.y[d.train], data.space, INNER_FOLDS, seed)
            fits += [Fit((group, d.name, j), d.train[a], d.train[b]) for j, (a, b) in enumerate(inner_splits[d.name])]
    return fits, inner_splits


def _holdout_result(
    data: TrainingSet,
    directions: Sequence[Direction],
    outputs: dict,
    group: str,
    inner_splits: dict[str, list[tuple[np.ndarray, np.ndarray]]],
) -> ShiftResult:
    proba = np.zeros((len(data.y), data.space.n_labels))
    per_direction, inner_oof, fit_seconds = {}, {}, 0.0
    for d in directions:
        output = outputs[(group, d.name)]
        proba[d.test] = output.proba
        fit_seconds += output.fit_seconds
        per_direction[d.name] = _direction_metrics(proba[d.test], data.y[d.test], data)
        if d.name in inner_splits:
            oof = np.zeros((len(d.train), data.space.n_labels))
            for j, (_, b) in enumerate(inner_splits[d.name]):
                oof[b] = outputs[(group, d.name, j)].proba
            inner_oof[d.name] = oof
    return ShiftResult(proba, per_direction, fit_seconds, inner_oof, rows=_held_rows(directions, len(data.y)))


def shift_holdout(
    build,
    data: TrainingSet,
    directions: Sequence[Direction],
    seed: int,
    inner: bool = False,
    done=lambda: None,
    n_jobs: int = 1,
) -> ShiftResult:
    """A freshly built model per direction, fitted on its training side and scored on its held-out
    source; with ``inner``, also the training side's own out-of-fold probabilities (for ensemble
    weights)."""
    fits, inner_splits = _holdout_fits(data, directions, seed, inner, "shift")
    outputs = run_fits(build, data.texts, data.y, fits, n_jobs, lambda f: done())
    return _holdout_result(data, directions, outputs, "shift", inner_splits)


def _direction_metrics(proba: np.ndarray, y: np.ndarray, data: TrainingSet) -> dict[str, float]:
    metrics = evaluate(proba, y, data.space)
    return {m: metrics[m] for m in SHIFT_METRICS}


def evaluate_ensemble(
    candidate: Candidate,
    singles: dict[str, CandidateResult],
    data: TrainingSet,
    split: Split,
    directions: Sequence[Direction],
    temporal: Direction | None = None,
    temporal_weights: Sequence[float] | None = None,
) -> CandidateResult:
    """Weights chosen (nested) on the members' OOF matrices — no member is refit. ``temporal_weights``: the
    temporal holdout's weights, given (else chosen on the members' inner folds of its training side)."""
    members = list(candidate.members)
    member_results = [singles[m] for m in members]
    started = time.perf_counter()
    ens = cross_validate_ensemble(candidate, {m: singles[m].cv.oof_proba for m in members}, data.y, split)
    search_seconds = time.perf_counter() - started
    used = [r for r, w in zip(member_results, ens.weights) if w > 0]
    metrics = cv_metrics(_scored(ens.oof_proba, data, split))
    metrics.update(
        # what the refit ensemble costs: its members' fits and predictions (an upper bound for
        # prediction: members with identical feature steps share one transform), each sentence
        # embedding counted once
        cv_fit_seconds=sum(r.metrics["cv_fit_seconds"] for r in used),
        predict_ms_per_abstract=_ensemble_cost(used),
        weight_search_seconds=search_seconds,
    )
    metrics.update(insample_metrics(_scored(ens.insample_proba, data, split)))
    weights = {m: round(float(w), 4) for m, w in zip(members, ens.weights)}
    extra = {
        "weights": ", ".join(f"{m}={w:g}" for m, w in weights.items()),
        **{f"fold{i}_weights": ", ".join(f"{w:g}" for w in np.round(fw, 4)) for i, fw in enumerate(ens.fold_weights)},
    }
    shift = later = None
    if temporal is not None:
        later = _shift_ensemble(candidate, member_results, data, [temporal], lambda m: m.temporal, temporal_weights)
        metrics.update(
            temporal_metrics(later), temporal_fit_seconds=sum(r.metrics["temporal_fit_seconds"] for r in used)
        )
        extra.update(
            {
                f"temporal_weights.{name}": ", ".join(f"{w:g}" for w in np.round(w_, 4))
                for name, w_ in later.weights.items()
            }
        )
    if directions:
        shift = _shift_ensemble(candidate, member_results, data, directions, lambda m: m.shift)
        metrics.update(shift_metrics(shift), shift_fit_seconds=sum(r.metrics["shift_fit_seconds"] for r in used))
        extra.update(
            {
                f"shift_weights.{name}": ", ".join(f"{w:g}" for w in np.round(w_, 4))
                for name, w_ in shift.weights.items()
            }
        )
    cv = CVResult(
        ens.oof_proba, sum(r.cv.fit_seconds for r in used), sum(r.cv.predict_seconds for r in used), len(split)
    )
    return CandidateResult(
        with_weights(candidate, ens.weights), metrics, cv, extra, weights, shift, data.y, temporal=later
    )


def _scored(proba: np.ndarray, data: TrainingSet, split: Split) -> dict[str, float]:
    """:func:`evaluate` on the rows the split scores (every row, but for a "new names known" split)."""
    rows = scored_rows(split, len(data.y))
    return evaluate(proba, data.y, data.space) if rows is None else evaluate(proba[rows], data.y[rows], data.space)


def _ensemble_cost(used: Sequence[CandidateResult]) -> float:
    own = sum(r.metrics["predict_ms_per_abstract"] - r.metrics.get("embedding_ms_per_abstract", 0.0) for r in used)
    return own + max((r.metrics.get("embedding_ms_per_abstract", 0.0) for r in used), default=0.0)


def _shift_ensemble(
    candidate: Candidate,
    members: Sequence[CandidateResult],
    data: TrainingSet,
    directions: Sequence[Direction],
    holdout=lambda m: m.shift,
    given: Sequence[float] | None = None,
) -> ShiftResult:
    """Per direction: weights chosen on the members' training-side inner OOF probabilities (or the ``given`` ones),
    applied to the members' held-out probabilities (from models fitted on the training side). ``holdout`` picks
    the members' result of the same directions (``m.shift`` or ``m.temporal``)."""
    spec = candidate.ensemble
    proba = np.zeros((len(data.y), data.space.n_labels))
    per_direction, weights = {}, {}
    for d in directions:
        w = (
            np.asarray(given, dtype=np.float64)
            if given is not None
            else select_weights(
                [holdout(m).inner_oof[d.name] for m in members], data.y[d.train], spec.rule, spec.steps, spec.objective
            )
        )
        proba[d.test] = combine([holdout(m).proba[d.test] for m in members], w, spec.rule)
        per_direction[d.name], weights[d.name] = _direction_metrics(proba[d.test], data.y[d.test], data), list(w)
    fit_seconds = sum(
        holdout(m).fit_seconds for m, wi in zip(members, np.max(list(weights.values()), axis=0)) if wi > 0
    )
    return ShiftResult(proba, per_direction, fit_seconds, weights=weights, rows=_held_rows(directions, len(data.y)))


def _held_rows(directions: Sequence[Direction], n: int) -> np.ndarray | None:
    """The rows some direction holds out, sorted; None when that is every row."""
    rows = np.unique(np.concatenate([d.test for d in directions]))
    return None if len(rows) == n else rows
