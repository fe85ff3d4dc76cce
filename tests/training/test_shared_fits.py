"""Candidates with identical TF-IDF steps are fitted together (one TF-IDF fit per fold): the same held-out
probabilities as fitting each alone, and the sweep groups exactly the candidates whose feature steps match."""

from __future__ import annotations

import numpy as np
import pytest

from papertrack.models.catalogue import CANDIDATES
from papertrack.models.hierarchy import LabelSpace
from papertrack.training.cv import fold_indices
from papertrack.training.evaluation import sharing_features
from papertrack.training.fits import Fit, run_fits, run_shared_fits
from tests.synthetic_corpus import corpus

SHARING = ["tfidf-word-logreg", "tfidf-word-svm", "tfidf-word-cnb"]


def _data():
    texts, labels = corpus(per_label=12, seed=3)
    space = LabelSpace.from_labels(labels)
    return texts, space, space.encode(labels)


def test_shared_fits_give_each_candidate_its_own_probabilities():
    texts, space, y = _data()
    folds = fold_indices(y, space, 3, seed=0)
    fits = [Fit(("cv", i), train, test) for i, (train, test) in enumerate(folds)]
    builds = {name: (lambda name=name: CANDIDATES[name].build(space.n_labels, 0)) for name in SHARING}
    heard: list[tuple[str, object]] = []
    # the CNB skips the last fold: a candidate's own fit list is respected
    shared = run_shared_fits(
        builds,
        texts,
        y,
        {**{n: fits for n in SHARING[:2]}, SHARING[2]: fits[:2]},
        on_done=lambda n, f: heard.append((n, f.key)),
    )
    assert sorted(heard) == sorted(
        [(n, f.key) for n in SHARING[:2] for f in fits] + [(SHARING[2], f.key) for f in fits[:2]]
    )
    assert set(shared[SHARING[2]]) == {("cv", 0), ("cv", 1)}
    for name in SHARING:
        alone = run_fits(builds[name], texts, y, fits)
        for key, output in shared[name].items():
            np.testing.assert_allclose(output.proba, alone[key].proba, rtol=1e-9, atol=1e-12)
            assert output.proba.shape == (len(fits[key[1]].test), space.n_labels)
            assert output.fit_seconds > 0
    # the models differ: sharing the features did not share the classifier
    assert not np.allclose(shared[SHARING[0]][("cv", 0)].proba, shared[SHARING[2]][("cv", 0)].proba)


def test_only_identical_feature_steps_are_grouped():
    texts, space, y = _data()

    class Data:  # what sharing_features reads
        pass

    data = Data()
    data.space = space  # type: ignore[attr-defined]
    names = ["tfidf-word-logreg", "tfidf-word12-cnb", "tfidf-word-svm", "majority-baseline", "tfidf-word-cnb"]
    groups = sharing_features([CANDIDATES[n] for n in names], data, 0)  # type: ignore[arg-type]
    assert [[c.name for c in g] for g in groups] == [
        ["tfidf-word-logreg", "tfidf-word-svm", "tfidf-word-cnb"],
        ["tfidf-word12-cnb"],
        ["majority-baseline"],
    ]


@pytest.fixture
def workers_asked(monkeypatch) -> list[int]:
    """joblib's Parallel replaced: each request for worker processes is recorded (its n_jobs) and stopped there."""
    import joblib

    asked: list[int] = []

    class Workers:
        def __init__(self, n_jobs, **kwargs):
            asked.append(n_jobs)
            raise InterruptedError("workers asked for")

    monkeypatch.setattr(joblib, "Parallel", Workers)
    return asked


def test_fits_on_small_data_run_in_this_process_whatever_the_jobs(monkeypatch, workers_asked):
    """Worker processes cost ~2 s each to start (they import scikit-learn and papertrack): fits on fewer than
    SIDE_BY_SIDE_ROWS rows stay in this process with n_jobs=2; from that many rows on they go to the workers
    (asked for here, not started: test_temporal.py checks what the workers answer)."""
    from papertrack.training import fits as fits_module

    texts, space, y = _data()
    folds = [Fit(("cv", i), train, test) for i, (train, test) in enumerate(fold_indices(y, space, 3, seed=0))]
    build = lambda: CANDIDATES["tfidf-word-cnb"].build(space.n_labels, 0)  # noqa: E731
    assert len(texts) < fits_module.SIDE_BY_SIDE_ROWS
    alone = run_fits(build, texts, y, folds, n_jobs=2)
    shared = run_shared_fits({"cnb": build}, texts, y, {"cnb": folds}, n_jobs=2)
    assert workers_asked == [] and set(alone) == set(shared["cnb"]) == {f.key for f in folds}
    monkeypatch.setattr(fits_module, "SIDE_BY_SIDE_ROWS", len(texts))
    for run in (
        lambda: run_fits(build, texts, y, folds, n_jobs=2),
        lambda: run_shared_fits({"cnb": build}, texts, y, {"cnb": folds}, n_jobs=2),
    ):
        with pytest.raises(InterruptedError):
            run()
    assert workers_asked == [2, 2]


def test_a_lone_fit_on_enough_rows_goes_to_the_workers(monkeypatch, workers_asked):
    """The heads' threads each hand their temporal holdout's one fit to the workers (in this process two fits at
    once would share liblinear's random generator)."""
    from papertrack.training import fits as fits_module

    texts, space, y = _data()
    (fit,) = [Fit(("cv", i), train, test) for i, (train, test) in enumerate(fold_indices(y, space, 3, seed=0))][:1]
    monkeypatch.setattr(fits_module, "SIDE_BY_SIDE_ROWS", len(texts))
    with pytest.raises(InterruptedError):
        run_fits(lambda: CANDIDATES["tfidf-word-cnb"].build(space.n_labels, 0), texts, y, [fit], n_jobs=2)
    assert workers_asked == [2]


def test_fits_in_this_process_run_one_at_a_time_whichever_thread_asks():
    """Two threads fitting at once in one process (the heads, a thread each) take turns: liblinear (LinearSVC) keeps
    one random generator per process, so overlapping fits changed each other's models."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    texts, space, y = _data()
    folds = [Fit(("cv", i), train, test) for i, (train, test) in enumerate(fold_indices(y, space, 3, seed=0))]
    running, most = [0], [0]
    count = threading.Lock()

    class Slow:
        def __init__(self):
            self.inner = CANDIDATES["tfidf-word-svm"].build(space.n_labels, 0)

        def fit(self, texts, y):
            with count:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.2)  # long enough for the other thread's fit to start meanwhile
            self.inner.fit(texts, y)
            with count:
                running[0] -= 1
            return self

        def predict_proba(self, texts):
            return self.inner.predict_proba(texts)

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda _: run_fits(Slow, texts, y, folds, n_jobs=1), range(2)))
    assert most[0] == 1
    for key in done[0]:  # and the same models either way
        np.testing.assert_array_equal(done[0][key].proba, done[1][key].proba)
