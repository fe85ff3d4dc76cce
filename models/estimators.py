"""Text classifiers that always answer with a probability for every label of the label space.

Every candidate is a :class:`TextClassifier`: a feature step (texts -> matrix) and a classifier.
When a training set lacks some labels (a cross-validation fold of a rare label), the missing
labels get probability 0 — the output always has ``n_labels`` columns in label-space order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import KFold

from papertrack.models.fast_predict import calibration_scores, classifier_proba, tfidf_rows


def expand_proba(proba: np.ndarray, classes: np.ndarray, n_labels: int) -> np.ndarray:
    """Place the columns of ``proba`` (one per fitted class) into a full (n, n_labels) matrix."""
    full = np.zeros((proba.shape[0], n_labels), dtype=np.float64)
    full[:, np.asarray(classes, dtype=np.int64)] = proba
    if proba.dtype != np.float64:  # single-precision features: rows summed to 1 within float32's rounding
        full /= full.sum(axis=1, keepdims=True)
    return full


class TextClassifier(ClassifierMixin, BaseEstimator):
    """features (texts -> matrix) + classifier, answering over the full label space.

    A scikit-learn estimator: ``features``, ``classifier`` and ``n_labels`` are kept as given and
    never fitted; :meth:`fit` fits clones of them into ``features_`` and ``classifier_``, so
    ``sklearn.base.clone`` gives a fresh unfitted copy and the objects passed in are never changed.
    """

    def __init__(self, features, classifier, n_labels: int):
        self.features = features
        self.classifier = classifier
        self.n_labels = n_labels

    def fit(self, texts: Sequence[str], y: np.ndarray) -> TextClassifier:
        features = clone(self.features)
        return self.fit_from_features(features, features.fit_transform(texts, y), y)

    def fit_from_features(self, fitted_features, matrix, y: np.ndarray) -> TextClassifier:
        """Fit the classifier on rows that ``fitted_features`` (already fitted, possibly shared with
        other classifiers) produced; it becomes this classifier's ``features_``."""
        self.features_ = fitted_features
        self.classifier_ = fast_sparse_scoring(clone(self.classifier).fit(matrix, y))
        self.classes_ = np.arange(self.n_labels)
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return self.proba_from_features(tfidf_rows([self.features_], texts)[0])

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.predict_proba(texts).argmax(axis=1)

    def text_features(self, texts: Sequence[str]):
        """The fitted feature step's rows for ``texts`` (what the classifier sees; sparse or dense)."""
        return self.features_.transform(texts)

    def proba_from_features(self, matrix) -> np.ndarray:
        """The classifier's probabilities for already-transformed rows, over the full label space."""
        return expand_proba(classifier_proba(self.classifier_, matrix), self.classifier_.classes_, self.n_labels)


class TemperatureScaled(ClassifierMixin, BaseEstimator):
    """Turns a classifier's scores (decision values, or log-probabilities) into probabilities with a
    softmax whose temperature is fitted out-of-fold (minimum log-loss).

    scikit-learn's CalibratedClassifierCV needs every class in every inner fold, which labels with
    one or two examples cannot give; a single temperature fitted on out-of-fold scores calibrates
    well for ranking and works with any class counts. It also makes naive Bayes probabilities
    (nearly uniform as they come) usable for the area roll-up.
    """

    def __init__(self, estimator, calibration_folds: int = 3, random_state: int = 0):
        self.estimator = estimator
        self.calibration_folds = calibration_folds
        self.random_state = random_state

    def fit(self, X, y):
        self.estimator_ = fast_sparse_scoring(clone(self.estimator).fit(X, y))
        self.classes_ = self.estimator_.classes_
        folds = KFold(self.calibration_folds, shuffle=True, random_state=self.random_state)
        scores = np.full((X.shape[0], len(self.classes_)), np.nan)
        for train, test in folds.split(X):
            fold_model = clone(self.estimator).fit(X[train], y[train])
            cols = np.searchsorted(self.classes_, fold_model.classes_)
            scores[np.ix_(test, cols)] = _scores(fold_model, X[test])
        # a class unseen in a fold's training part gets the row's lowest score
        scores = np.where(np.isnan(scores), np.nanmin(scores, axis=1, keepdims=True), scores)
        self.temperature_ = _fit_temperature(scores, np.searchsorted(self.classes_, y))
        return self

    def predict_proba(self, X):
        scores = calibration_scores(self.estimator_, X)
        if scores is None:
            scores = _scores(self.estimator_, X)
        return softmax(scores / self.temperature_, axis=1)


def fast_sparse_scoring(model):
    """``model`` with its weight matrix (``coef_``, naive Bayes' ``feature_log_prob_``: labels × features)
    in column-major order, so the ``X @ W.T`` scikit-learn computes at predict time reads it in place. In
    row-major order scipy copies the transpose on every call: for a 68,000-feature bigram naive Bayes that
    copy was 17 of the 20 ms one /predict took. The numbers are the same; only the layout changes.

    Naive Bayes' ``feature_count_`` (the training counts, labels × features, read only by ``partial_fit``, which
    papertrack never calls) is dropped: half of a bigram naive Bayes in the artifact (63 of its 126 MB)."""
    for attr in ("coef_", "feature_log_prob_"):
        value = getattr(model, attr, None)
        if isinstance(value, np.ndarray) and value.ndim == 2 and not value.flags["F_CONTIGUOUS"]:
            setattr(model, attr, np.asfortranarray(value))
    if isinstance(getattr(model, "feature_log_prob_", None), np.ndarray) and hasattr(model, "feature_count_"):
        del model.feature_count_
    return model


def _scores(model, X) -> np.ndarray:
    if hasattr(model, "decision_function"):
        scores = model.decision_function(X)
        if scores.ndim == 1:  # two classes
            scores = np.column_stack([-scores, scores])
        return scores
    return model.predict_log_proba(X)


TEMPERATURES = np.geomspace(0.001, 100.0, 101)  # the temperatures a TemperatureScaled model can choose from


def _fit_temperature(scores: np.ndarray, target: np.ndarray) -> float:
    """The temperature of :data:`TEMPERATURES` with the lowest log-loss. The log-loss of ``softmax(scores * b)``
    is convex in ``b = 1 / t`` (a log-sum-exp of linear functions), so along the grid it falls then rises: a
    binary search on its slope finds the grid's minimum with ~14 evaluations instead of 101."""
    rows = np.arange(len(target))
    losses: dict[int, float] = {}

    def loss(i: int) -> float:
        if i not in losses:
            losses[i] = float(-np.log(softmax(scores / TEMPERATURES[i], axis=1)[rows, target] + 1e-12).mean())
        return losses[i]

    lo, hi = 0, len(TEMPERATURES) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if loss(mid) <= loss(mid + 1):
            hi = mid
        else:
            lo = mid + 1
    return float(TEMPERATURES[lo])
