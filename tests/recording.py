"""A TF-IDF step that remembers which texts it was fitted on: the holdout tests check what every fitted
step saw (module-level, so clones and pickles record too)."""

from __future__ import annotations

from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from papertrack.models.candidates import Candidate
from papertrack.models.estimators import TextClassifier

FITTED: list[list[str]] = []  # the texts every RecordingTfidf was fitted on, in order


class RecordingTfidf(TransformerMixin, BaseEstimator):
    def fit(self, texts, y=None):
        FITTED.append(list(texts))
        self.vectorizer_ = TfidfVectorizer().fit(texts)
        return self

    def transform(self, texts):
        return self.vectorizer_.transform(texts)


def recording_candidate(name: str, C: float) -> Candidate:
    """A logistic-regression candidate over RecordingTfidf features."""
    return Candidate(
        name,
        "logreg",
        "tfidf-recording",
        {"C": C},
        lambda n, seed: TextClassifier(RecordingTfidf(), LogisticRegression(C=C, max_iter=200), n),
    )
