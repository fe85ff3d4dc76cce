"""The candidate classifiers of a training sweep: a name, a family and a builder.

A candidate builds a fresh :class:`~papertrack.models.estimators.TextClassifier` for a label
space size; the sweep cross-validates each one and the best is refit on all data. Other modules
(the embedding families) add candidates with :func:`register`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sklearn.decomposition import TruncatedSVD
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import ComplementNB
from sklearn.pipeline import make_pipeline

from sklearn.svm import LinearSVC

from papertrack.errors import UsageError
from papertrack.features.text import feature_params, tfidf
from papertrack.models.estimators import TemperatureScaled, TextClassifier

CALIBRATION = {"calibration": "softmax temperature fitted on 3-fold out-of-fold scores"}


@dataclass(frozen=True)
class Candidate:
    name: str
    family: str  # logreg, svm, cnb, lightgbm, ... — the leaderboard groups by it
    features: str  # what the classifier sees, e.g. "tfidf-word"
    params: dict  # every hyperparameter, logged to MLflow
    build: Callable[[int, int], TextClassifier] = field(repr=False)  # (n_labels, seed) -> classifier
    default: bool = True  # part of the default sweep
    requirements: tuple[str, ...] = ()  # distributions the fitted model needs beyond the core ones


CANDIDATES: dict[str, Candidate] = {}


def register(candidate: Candidate) -> Candidate:
    if candidate.name in CANDIDATES:
        raise ValueError(f"candidate {candidate.name!r} is registered twice")
    CANDIDATES[candidate.name] = candidate
    return candidate


def _logreg(kind: str, C: float, default: bool = True) -> Candidate:
    params = {"C": C, "class_weight": "balanced", "max_iter": 300, **feature_params(kind)}
    return Candidate(
        f"tfidf-{kind}-logreg", "logreg", f"tfidf-{kind}", params,
        lambda n, seed: TextClassifier(
            tfidf(kind), LogisticRegression(C=C, class_weight="balanced", max_iter=300, random_state=seed), n),
        default=default,
    )


def _svm(kind: str, C: float, default: bool = True) -> Candidate:
    params = {"C": C, "class_weight": "balanced", **CALIBRATION, **feature_params(kind)}
    return Candidate(
        f"tfidf-{kind}-svm", "svm", f"tfidf-{kind}", params,
        lambda n, seed: TextClassifier(tfidf(kind), TemperatureScaled(
            LinearSVC(C=C, class_weight="balanced", random_state=seed), random_state=seed), n),
        default=default,
    )


def _cnb(kind: str, alpha: float) -> Candidate:
    params = {"alpha": alpha, **CALIBRATION, **feature_params(kind)}
    return Candidate(f"tfidf-{kind}-cnb", "cnb", f"tfidf-{kind}", params,
                     lambda n, seed: TextClassifier(tfidf(kind), TemperatureScaled(
                         ComplementNB(alpha=alpha), random_state=seed), n))


def _lightgbm(kind: str, components: int) -> Candidate:
    # 85 classes means 85 trees per boosting round: few shallow rounds keep a 5-fold CV near a minute
    lgbm = dict(n_estimators=60, learning_rate=0.15, num_leaves=7, max_bin=63, min_child_samples=3,
                subsample=0.8, subsample_freq=1, colsample_bytree=0.5, class_weight="balanced",
                reg_lambda=1.0, verbose=-1, n_jobs=1)
    params = {"svd_components": components, **lgbm, **feature_params(kind)}

    def build(n: int, seed: int) -> TextClassifier:
        from lightgbm import LGBMClassifier  # imported lazily: only this family needs it

        features = make_pipeline(tfidf(kind), TruncatedSVD(components, random_state=seed))
        return TextClassifier(features, LGBMClassifier(random_state=seed, **lgbm), n)

    return Candidate(f"tfidf-{kind}-svd{components}-lightgbm", "lightgbm", f"tfidf-{kind}+svd", params, build)


def _majority() -> Candidate:
    """Always answers the training label frequencies: the floor every real model must clear."""
    from sklearn.dummy import DummyClassifier

    return Candidate("majority-baseline", "baseline", "none", {"strategy": "prior"},
                     lambda n, seed: TextClassifier(_ConstantFeatures(), DummyClassifier(strategy="prior"), n),
                     default=False)


class _ConstantFeatures:
    """One constant feature per text (for the baseline)."""

    def fit_transform(self, texts, y=None):
        return self.transform(texts)

    def transform(self, texts):
        import numpy as np

        return np.ones((len(texts), 1))


for _candidate in (
    _logreg("word", 10.0),
    _logreg("union", 10.0, default=False),  # ~4x slower than word features for +0.01 top-3
    _svm("word", 0.3),
    # character n-grams: ~15 s per fit for no weight in the winning ensemble; kept out of the default
    # sweep to hold it within 5 minutes (select them with -c)
    _svm("char", 0.3, default=False),
    _svm("union", 0.3, default=False),
    _cnb("word", 0.3),
    _cnb("word12", 0.3),
    _lightgbm("word", 128),
    _majority(),
):
    register(_candidate)


def default_sweep() -> list[Candidate]:
    return [c for c in CANDIDATES.values() if c.default]


def select(names: list[str] | None) -> list[Candidate]:
    if not names:
        return default_sweep()
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        raise UsageError(f"unknown candidate(s) {', '.join(unknown)}; known: {', '.join(CANDIDATES)}")
    return [CANDIDATES[n] for n in names]


from papertrack.models import embedding_candidates  # noqa: E402,F401  registers the embedding families and the ensembles
