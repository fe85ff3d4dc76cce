"""Independent fits of one candidate, run side by side.

Cross-validation folds, the holdouts' training sides and their inner folds are independent: each is a
fresh model fitted on some rows and scored on others. :func:`run_fits` runs a list of them, in worker
processes when ``n_jobs`` > 1 (joblib's loky backend: BLAS limited to one thread per worker), and
returns each one's held-out probabilities and timings by key. The results do not depend on ``n_jobs``:
every fit builds its model from the same seed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Fit:
    key: Hashable
    train: np.ndarray  # row indices fitted on
    test: np.ndarray  # row indices scored
    extra: bool = False  # also answer the run's ``extra`` texts (rows of no fit: other taxonomies' own papers)


@dataclass
class FitOutput:
    proba: np.ndarray  # (len(test), n_labels)
    fit_seconds: float
    predict_seconds: float  # the test rows' share of the prediction time (the extra texts' left out)
    extra_proba: np.ndarray | None = None  # (len(extra), n_labels) for a fit with ``extra``


def _test_texts(texts: np.ndarray, fit: Fit, extra: list[str]) -> list[str]:
    return list(texts[fit.test]) + (extra if fit.extra else [])


def _split_extra(output: FitOutput, fit: Fit) -> FitOutput:
    """The fit's test rows' answers, and the extra texts' apart (their prediction time left out)."""
    if not fit.extra:
        return output
    n = len(fit.test)
    share = n / max(1, len(output.proba))
    return FitOutput(output.proba[:n], output.fit_seconds, output.predict_seconds * share, output.proba[n:])


SIDE_BY_SIDE_ROWS = 300
"""Below this many rows a list of fits runs in this process whatever ``n_jobs`` says: each worker process first
imports scikit-learn and papertrack (~2 s), more than such fits take (BENCHMARKS.md "Small data, one process")."""


def side_by_side(n_jobs: int, n_rows: int) -> bool:
    """Whether fits over ``n_rows`` rows are worth worker processes (a lone fit too: the heads' threads each hand
    their temporal holdout's fit to the workers at the same time)."""
    return n_jobs > 1 and n_rows >= SIDE_BY_SIDE_ROWS


_IN_THIS_PROCESS = threading.RLock()
"""Fits in this process run one at a time, whichever thread asks (the heads are evaluated a thread each):
scikit-learn's liblinear (``LinearSVC``) seeds one random generator per process and releases the GIL while it
fits, so two fits at once drew from each other's sequence and a head's figures changed from run to run."""


def _one_at_a_time(fit: Callable[..., Any], job: tuple) -> Any:
    with _IN_THIS_PROCESS:
        return fit(*job)


def _outputs(fit: Callable[..., Any], jobs: list[tuple], n_jobs: int, n_rows: int) -> Iterator[Any]:
    """``fit(*job)`` of each job, in order: in worker processes when they are worth it (:func:`side_by_side`),
    else here, one fit at a time."""
    if side_by_side(n_jobs, n_rows):
        from joblib import Parallel, delayed

        # n_jobs as asked even for fewer jobs: joblib runs n_jobs=1 in the calling thread, and a smaller pool would
        # stop a worker that the next call then starts again
        return Parallel(n_jobs=n_jobs, return_as="generator")(delayed(fit)(*job) for job in jobs)
    return (_one_at_a_time(fit, job) for job in jobs)


def default_jobs() -> int:
    """Worker processes for the sweep's fits: one per core, at most 2 (what this project's machines have)."""
    return max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _fit_one(
    build: Callable[[], object], train_texts: list[str], y_train: np.ndarray, test_texts: list[str]
) -> FitOutput:
    from papertrack.training import term_cache

    model = build()
    started = time.perf_counter()
    if hasattr(model, "fit_from_features"):  # a TextClassifier: its TF-IDF terms from this process's cache
        model.fit_from_features(*term_cache.fit_transform(model.features, train_texts, y_train), y_train)
    else:
        model.fit(train_texts, y_train)
    fitted = time.perf_counter()
    proba = model.predict_proba(test_texts)
    return FitOutput(np.asarray(proba), fitted - started, time.perf_counter() - fitted)


def run_fits(
    build: Callable[[], object],
    texts: Sequence[str],
    y: np.ndarray,
    fits: Sequence[Fit],
    n_jobs: int = 1,
    on_done: Callable[[Fit], None] | None = None,
    extra: Sequence[str] = (),
) -> dict[Hashable, FitOutput]:
    """Every fit of ``fits`` (a fresh ``build()`` each), by key; ``on_done`` hears of each as it finishes
    (in order). A fit marked ``extra`` also answers the ``extra`` texts (``FitOutput.extra_proba``)."""
    texts = np.asarray(texts, dtype=object)
    extra = list(extra)
    jobs = [(build, list(texts[f.train]), y[f.train], _test_texts(texts, f, extra)) for f in fits]
    outputs = _outputs(_fit_one, jobs, n_jobs, len(texts))
    results = {}
    for fit, output in zip(fits, outputs):
        results[fit.key] = _split_extra(output, fit)
        if on_done:
            on_done(fit)
    return results


def run_shared_fits(
    builds: dict[str, Callable[[], object]],
    texts: Sequence[str],
    y: np.ndarray,
    fits: dict[str, Sequence[Fit]],
    n_jobs: int = 1,
    on_done: Callable[[str, Fit], None] | None = None,
    extra: Sequence[str] = (),
) -> dict[str, dict[Hashable, FitOutput]]:
    """:func:`run_fits` for candidates whose models (``TextClassifier``) have identical feature steps: each fit
    (by key) fits the feature step once and every candidate's classifier on its rows — the same probabilities as
    fitting each alone, for one TF-IDF fit instead of one per candidate. ``fits``: each candidate's fits (by name;
    keys shared between candidates are one job). Each candidate's ``fit_seconds``/``predict_seconds`` include the
    whole feature step (what it costs alone). ``on_done`` hears of each (candidate, fit) in order; ``extra``: as
    :func:`run_fits`."""
    texts = np.asarray(texts, dtype=object)
    extra = list(extra)
    by_key: dict[Hashable, tuple[Fit, list[str]]] = {}
    for name, candidate_fits in fits.items():
        for fit in candidate_fits:
            by_key.setdefault(fit.key, (fit, []))[1].append(name)
    jobs = [
        ({n: builds[n] for n in names}, list(texts[f.train]), y[f.train], _test_texts(texts, f, extra))
        for f, names in by_key.values()
    ]
    outputs = _outputs(_fit_shared, jobs, n_jobs, len(texts))
    results: dict[str, dict[Hashable, FitOutput]] = {name: {} for name in fits}
    for (fit, names), output in zip(by_key.values(), outputs):
        for name in names:
            results[name][fit.key] = _split_extra(output[name], fit)
            if on_done:
                on_done(name, fit)
    return results


def _fit_shared(
    builds: dict[str, Callable[[], object]], train_texts: list[str], y_train: np.ndarray, test_texts: list[str]
) -> dict[str, FitOutput]:
    from papertrack.models.fast_predict import tfidf_rows
    from papertrack.training import term_cache

    models = {name: build() for name, build in builds.items()}
    started = time.perf_counter()
    first = next(iter(models.values()))
    features, matrix = term_cache.fit_transform(first.features, train_texts, y_train)  # type: ignore[attr-defined]
    featured = time.perf_counter()
    (test_matrix,) = tfidf_rows([features], test_texts)
    transform_seconds = time.perf_counter() - featured
    out = {}
    for name, model in models.items():
        fit_started = time.perf_counter()
        model.fit_from_features(features, matrix, y_train)  # type: ignore[attr-defined]
        fitted = time.perf_counter()
        proba = model.proba_from_features(test_matrix)  # type: ignore[attr-defined]
        out[name] = FitOutput(
            np.asarray(proba),
            (featured - started) + (fitted - fit_started),
            transform_seconds + time.perf_counter() - fitted,
        )
    return out
