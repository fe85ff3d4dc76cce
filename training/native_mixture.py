"""The native model of a crosswalked taxonomy, in the sweep: out-of-fold answers, its share, the mixed figures.

For a taxonomy taught through a crosswalk (:mod:`papertrack.training.taxonomies`; ICML 2025), every candidate's
answers are mixed with those of :data:`NATIVE_CANDIDATE` fitted on the taxonomy's **own** papers only
(:mod:`papertrack.models.native_mixture`). On its "new names known" split (k-fold over its own papers, the older
papers on every training side):

* the native model is fitted per fold on that fold's own papers of the training side (never a test paper);
* the share ``alpha`` is chosen from :data:`SHARES` for each outer fold on the *other* folds' out-of-fold rows
  (nested, like the ensemble weights: :mod:`papertrack.training.ensemble_weights`) and applied to that fold's
  rows, maximising :func:`objective` (label top-3 + area top-1, the taxonomy's two figures; log-loss breaks
  ties); the share of the
  refit model is chosen on every scored row.

A fit whose training side holds none of the taxonomy's own papers (its temporal holdout: trained on the earlier
years only) has no native model: its figures are the candidate's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from papertrack.models.hierarchy import LabelSpace
from papertrack.models.native_mixture import mix
from papertrack.training.cv import cv_result, scored_rows
from papertrack.training.data import TrainingSet
from papertrack.training.fits import Fit, run_fits
from papertrack.training.results import CandidateResult, cv_metrics
from papertrack.training.scoring import evaluate, log_loss, top_k_accuracy

NATIVE_CANDIDATE = "tfidf-word-logreg"  # what the native model is (its own TF-IDF, fitted on the own papers)
SHARES = tuple(float(s) for s in np.round(np.arange(0.0, 0.85, 0.05), 2))  # the native model's share: a grid
Split = Sequence[tuple[np.ndarray, np.ndarray]]


def objective(proba: np.ndarray, y: np.ndarray, space: LabelSpace) -> float:
    """Label top-3 accuracy + area top-1 accuracy (higher is better)."""
    area = space.area_proba(proba).argmax(axis=1) == space.label_area[y]
    return top_k_accuracy(proba, y, 3) + float(area.mean())


def choose_share(base: np.ndarray, native: np.ndarray, y: np.ndarray, space: LabelSpace) -> float:
    """The share of :data:`SHARES` whose mixture scores best on these rows by :func:`objective`; among ties (a
    small label space where every top-3 hits) the one of lowest log-loss, then the smallest."""
    scored = []
    for share in SHARES:
        proba = mix(base, native, share)
        scored.append((round(objective(proba, y, space), 12), -log_loss(proba, y)))
    return SHARES[max(range(len(SHARES)), key=lambda i: (scored[i], -i))]


def build_native(n_labels: int, seed: int):
    from papertrack.models.catalogue import CANDIDATES

    return CANDIDATES[NATIVE_CANDIDATE].build(n_labels, seed)


def refit_mixture(classifier, data: TrainingSet, share: float, seed: int):
    """The refit model of a crosswalked taxonomy: ``classifier`` (fitted on every row of ``data``) mixed at ``share``
    with the native model fitted on the taxonomy's own papers."""
    from papertrack.models.native_mixture import NativeMixture

    own = data.native_rows
    native = build_native(data.space.n_labels, seed).fit([data.texts[i] for i in own], data.y[own])
    return NativeMixture(classifier, native, share, data.space.n_labels, f"{NATIVE_CANDIDATE} (own papers)")


def native_oof(data: TrainingSet, split: Split, seed: int, n_jobs: int = 1) -> np.ndarray | None:
    """Out-of-fold probabilities of the native model on ``split``'s test rows, each fold's model fitted on its
    training side's own papers only; None when some fold's own papers hold fewer than 2 labels (nothing to fit)."""
    own = data.native_rows
    fits = [Fit(i, np.intersect1d(train, own), test) for i, (train, test) in enumerate(split)]
    if not fits or any(len(np.unique(data.y[f.train])) < 2 for f in fits):
        return None
    outputs = run_fits(lambda: build_native(data.space.n_labels, seed), data.texts, data.y, fits, n_jobs)
    return cv_result(fits, outputs, len(data.y), data.space.n_labels).oof_proba


def mix_results(
    results: Sequence[CandidateResult], data: TrainingSet, split: Split, seed: int, n_jobs: int = 1
) -> np.ndarray | None:
    """Mix every result's out-of-fold answers on ``split`` with the native model's (nested shares, see the
    module's docstring) and re-score its ``cv_*`` metrics; sets each result's ``native_share`` (the refit's),
    ``native_share`` metric and per-fold shares. The majority baseline is left as it is. Nothing changes when
    ``data`` marks no row as mapped in (a taxonomy that is not crosswalked) or :func:`native_oof` cannot fit.
    Returns the native model's out-of-fold probabilities (None when nothing was mixed). ``insample_*`` metrics
    stay the candidate's own."""
    if data.native is None:
        return None
    native = native_oof(data, split, seed, n_jobs)
    if native is None:
        return None
    rows = scored_rows(split, len(data.y))
    rows = np.arange(len(data.y)) if rows is None else rows
    for result in results:
        if result.candidate.family == "baseline":  # the floor every model must clear stays the floor
            continue
        base = result.cv.oof_proba
        mixed = base.copy()
        shares = []
        for train, test in split:
            chosen = np.intersect1d(train, rows)
            share = choose_share(base[chosen], native[chosen], data.y[chosen], data.space)
            mixed[test] = mix(base[test], native[test], share)
            shares.append(share)
        result.native_share = choose_share(base[rows], native[rows], data.y[rows], data.space)
        result.cv = dataclasses.replace(result.cv, oof_proba=mixed)
        result.metrics.update(cv_metrics(evaluate(mixed[rows], data.y[rows], data.space)))
        result.metrics["native_share"] = result.native_share
        result.extra_params["native_share"] = f"{result.native_share:g} (folds: {', '.join(f'{s:g}' for s in shares)})"
    return native
