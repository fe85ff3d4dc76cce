"""What a sweep candidate is, and the TF-IDF candidates (plus the majority baseline).

A :class:`Candidate` is data: a name, a family, what its classifier sees, the hyperparameters
logged to MLflow, the distributions its fitted model needs beyond the core ones, and a builder of
a fresh, unfitted classifier for a label space size and a seed. An ensemble candidate also declares
its members (candidate names) and how their probabilities are combined, in an :class:`EnsembleSpec`.

The full catalogue (every family, listed explicitly) is :mod:`papertrack.models.catalogue`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import TruncatedSVD
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import ComplementNB
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from papertrack.features.text import feature_params, tfidf
from papertrack.models.estimators import TemperatureScaled, TextClassifier

CALIBRATION = {"calibration": "softmax temperature fitted on 3-fold out-of-fold scores"}
LIGHTGBM_REQUIREMENTS = ("lightgbm",)


@dataclass(frozen=True)
class EnsembleSpec:
    """An ensemble's declaration: its members (candidate names, in order) and its weight search."""

    members: tuple[str, ...]
    rule: str = "mean"  # how member probabilities combine (papertrack.models.ensemble.combine)
    steps: int = 20  # greedy weight-search additions (weights are multiples of 1/steps)
    objective: str = "top3+f1"  # what the weight search maximises


@dataclass(frozen=True)
class Candidate:
    name: str
    family: str  # logreg, svm, cnb, lightgbm, ... — the leaderboard groups by it
    features: str  # what the classifier sees, e.g. "tfidf-word"
    params: dict  # every hyperparameter, logged to MLflow
    build: Callable[..., object] = field(repr=False)  # (n_labels, seed) -> unfitted classifier
    default: bool = True  # part of the default sweep
    requirements: tuple[str, ...] = ()  # distributions the fitted model needs beyond the core ones
    ensemble: EnsembleSpec | None = None  # set for an ensemble of other candidates
    # predict cost per abstract measured on the reference machine (2 cores; BENCHMARKS.md): the cost budget
    # (``papertrack train --budget-ms``) leaves a candidate out of the default sweep by it, before running it
    expected_ms: float = 1.0

    @property
    def is_ensemble(self) -> bool:
        return self.ensemble is not None

    @property
    def members(self) -> tuple[str, ...]:
        """An ensemble's member candidates (names); () for a single model."""
        return self.ensemble.members if self.ensemble else ()


def _logreg(kind: str, C: float, default: bool = True, expected_ms: float = 0.2) -> Candidate:
    # newton-cg: 9 Newton steps where lbfgs took 70 iterations on the ICML 2025 head (2.4x faster, the same
    # optimum: BENCHMARKS.md "Sweep time")
    params = {"C": C, "class_weight": "balanced", "max_iter": 300, "solver": "newton-cg", **feature_params(kind)}
    return Candidate(
        f"tfidf-{kind}-logreg",
        "logreg",
        f"tfidf-{kind}",
        params,
        lambda n, seed: TextClassifier(
            tfidf(kind),
            LogisticRegression(C=C, class_weight="balanced", max_iter=300, solver="newton-cg", random_state=seed),
            n,
        ),
        default=default,
        expected_ms=expected_ms,
    )


def _svm(kind: str, C: float, default: bool = True, expected_ms: float = 0.2) -> Candidate:
    params = {"C": C, "class_weight": "balanced", **CALIBRATION, **feature_params(kind)}
    return Candidate(
        f"tfidf-{kind}-svm",
        "svm",
        f"tfidf-{kind}",
        params,
        lambda n, seed: TextClassifier(
            tfidf(kind),
            TemperatureScaled(LinearSVC(C=C, class_weight="balanced", random_state=seed), random_state=seed),
            n,
        ),
        default=default,
        expected_ms=expected_ms,
    )


def _cnb(kind: str, alpha: float, expected_ms: float = 0.2) -> Candidate:
    params = {"alpha": alpha, **CALIBRATION, **feature_params(kind)}
    return Candidate(
        f"tfidf-{kind}-cnb",
        "cnb",
        f"tfidf-{kind}",
        params,
        lambda n, seed: TextClassifier(tfidf(kind), TemperatureScaled(ComplementNB(alpha=alpha), random_state=seed), n),
        expected_ms=expected_ms,
    )


def _lightgbm(kind: str, components: int, default: bool = True, expected_ms: float = 0.4) -> Candidate:
    # 85 classes means 85 trees per boosting round: few shallow rounds keep a 5-fold CV near a minute
    lgbm: dict[str, Any] = dict(
        n_estimators=60,
        learning_rate=0.15,
        num_leaves=7,
        max_bin=63,
        min_child_samples=3,
        subsample=0.8,
        subsample_freq=1,
        colsample_bytree=0.5,
        class_weight="balanced",
        reg_lambda=1.0,
        verbose=-1,
        n_jobs=1,
    )
    params = {"svd_components": components, **lgbm, **feature_params(kind)}

    def build(n: int, seed: int) -> TextClassifier:
        from lightgbm import LGBMClassifier  # imported lazily: only this family needs it

        features = make_pipeline(tfidf(kind), TruncatedSVD(components, random_state=seed))
        return TextClassifier(features, LGBMClassifier(random_state=seed, **lgbm), n)

    return Candidate(
        f"tfidf-{kind}-svd{components}-lightgbm",
        "lightgbm",
        f"tfidf-{kind}+svd",
        params,
        build,
        default=default,
        requirements=LIGHTGBM_REQUIREMENTS,
        expected_ms=expected_ms,
    )


class ConstantFeatures(TransformerMixin, BaseEstimator):
    """One constant feature per text (for the baseline)."""

    def fit(self, texts, y=None):
        return self

    def transform(self, texts):
        return np.ones((len(texts), 1))


def majority_candidate() -> Candidate:
    """Always answers the training label frequencies: the floor every real model must clear."""
    from sklearn.dummy import DummyClassifier

    return Candidate(
        "majority-baseline",
        "baseline",
        "none",
        {"strategy": "prior"},
        lambda n, seed: TextClassifier(ConstantFeatures(), DummyClassifier(strategy="prior"), n),
        default=False,
        expected_ms=0.01,
    )


def tfidf_candidates() -> list[Candidate]:
    """The TF-IDF families, in sweep order (``expected_ms``: predict cost per abstract measured in
    BENCHMARKS.md, well inside any budget)."""
    return [
        _logreg("word", 10.0),
        _logreg("union", 10.0, default=False),  # ~4x slower than word features for +0.01 top-3
        _svm("word", 0.3),
        # character n-grams: ~15 s per fit for no weight in the winning ensemble; kept out of the default
        # sweep to hold it within 5 minutes (select them with -c)
        _svm("char", 0.3, default=False),
        _svm("union", 0.3, default=False),
        _cnb("word", 0.3),
        _cnb("word12", 0.3),
        # 0.599 CV top-3, weight 0 in ensemble-tfidf, and the slowest TF-IDF fit: out of the default sweep since
        # the shift holdout doubled the fits per candidate (select it with -c)
        _lightgbm("word", 128, default=False),
    ]


_ConstantFeatures = ConstantFeatures  # the name in pickles of baseline models logged before it was public
