"""A small synthetic labeled corpus and a TF-IDF + logistic-regression TrackPredictor fitted on it
(with its training profile), for the suggest and drift tests: seconds to build, no MLflow store."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

from papertrack.features.ingest import Record
from papertrack.features.text import tfidf
from papertrack.models.artifact import TrackPredictor
from papertrack.models.card import ModelCard
from papertrack.models.drift import build_profile
from papertrack.models.estimators import TextClassifier
from papertrack.models.hierarchy import LabelSpace

TOPICS = {
    "Deep Learning · Attention Mechanisms": "attention transformer heads tokens softmax query keys sequence",
    "Deep Learning · Graph Neural Networks": "graph nodes edges message passing neighbourhood molecules",
    "Theory · Learning Theory": "bound generalization complexity theorem sample rademacher proof",
    "Reinforcement Learning · Deep RL": "agent reward policy environment exploration episodes value",
    "Optimization · Convex": "convex gradient descent convergence rate smooth objective step",
    "Probabilistic Methods · Variational Inference": "posterior variational bayesian evidence prior latent",
}
COMMON = "we propose method results show experiments benchmark improves approach novel data".split()


def paper(topic_words: list[str], rng: np.random.Generator, words: int = 40, purity: float = 0.6) -> str:
    """One synthetic abstract: sentences mixing its topic's words with common ones."""
    chosen = [rng.choice(topic_words) if rng.random() < purity else rng.choice(COMMON) for _ in range(words)]
    return " ".join(chosen).capitalize() + ". We report experiments on standard data."


def corpus(per_label: int = 30, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for label, words in TOPICS.items():
        for _ in range(per_label):
            texts.append(paper(words.split(), rng))
            labels.append(label)
    return texts, labels


def fitted_predictor(per_label: int = 30, seed: int = 0) -> tuple[TrackPredictor, list[str], list[str]]:
    texts, labels = corpus(per_label, seed)
    space = LabelSpace.from_labels(labels)
    y = space.encode(labels)

    def build():
        return TextClassifier(tfidf("word"), LogisticRegression(C=10.0, max_iter=300), space.n_labels)

    folds = np.arange(len(texts)) % 5
    oof = np.zeros((len(texts), space.n_labels))
    for k in range(5):
        train, test = folds != k, folds == k
        model = build().fit([t for t, m in zip(texts, train) if m], y[train])
        oof[test] = model.predict_proba([t for t, m in zip(texts, test) if m])
    classifier = build().fit(texts, y)
    card = ModelCard(
        candidate="synthetic-logreg",
        family="logreg",
        data_digest="test",
        run_id="0" * 32,
        n_labels=space.n_labels,
        n_areas=len(space.areas),
    )
    profile = build_profile(texts, y, space, oof, seed=seed)
    return TrackPredictor(classifier, space, card, training_profile=profile), texts, labels


__all__ = ["TOPICS", "corpus", "fitted_predictor", "paper"]


def venue_records(names: dict[str, str], venue: str, year: int, per_label: int, seed: int) -> list[Record]:
    """``per_label`` synthetic papers of each label of ``names`` (label -> its topic words), from ``venue`` ``year``
    (origin "VENUE YEAR", source "venueYEAR.jsonl")."""
    rng = np.random.default_rng(seed)
    return [
        Record(
            id=f"{venue}{year}-{label}-{i}",
            abstract=paper(words.split(), rng),
            title=None,
            label=label,
            area=None,
            subarea=None,
            source=f"{venue.lower()}{year}.jsonl",
            line=i + 1,
            origin=f"{venue} {year}",
        )
        for label, words in names.items()
        for i in range(per_label)
    ]
