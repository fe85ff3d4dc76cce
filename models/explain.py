"""Why the model ranks a track high: the terms that pushed it up, and the nearest labeled papers.

One explanation of one abstract (:func:`explain`), shared by the HTTP service, the page and any script:

* **exact-linear** — the model is linear on TF-IDF features (logistic regression, a temperature-scaled
  linear SVM or complement naive Bayes): a term's weight for a track is its coefficient for that track times
  its TF-IDF value in the abstract (divided by the softmax temperature when there is one; naive Bayes
  log-probabilities centred over labels) — exactly its share of the track's score.
* **linear-member** — an ensemble with such a linear TF-IDF member: the exact terms of that member (the one
  with the largest weight) and of it only — the other members (e.g. sentence embeddings) are not explained;
  ``method.detail`` names the member and its weight and says so.
* **occlusion** — anything else (embeddings, LightGBM on SVD): each of the abstract's most frequent content
  words (at most ``MAX_OCCLUSION``) is removed and the drop of the track's probability is its weight; one
  batched prediction of the variants.

Each term comes with the character spans where it occurs in the abstract, so a page can highlight it
without re-implementing the tokenizer. Neighbours come from the artifact's
:class:`~papertrack.models.neighbors.NeighborIndex`.
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import sklearn
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer
from sklearn.pipeline import FeatureUnion

from papertrack.models.answer import DEFAULT_TERMS, AnswerDict
from papertrack.models.estimators import TemperatureScaled, TextClassifier
from papertrack.models.neighbors import DEFAULT_NEIGHBORS, Neighbor

if TYPE_CHECKING:
    from papertrack.models.artifact import TrackPredictor

MAX_OCCLUSION = 40
_WORD = re.compile(r"(?u)\b\w\w+\b")  # TfidfVectorizer's default token pattern


class Term(TypedDict):
    term: str
    weight: float  # how much it pushed the track up (score units for linear models, probability for occlusion)
    spans: list[list[int]]  # [start, end) character offsets in the abstract


class TrackExplanation(TypedDict):
    label: str
    terms: list[Term]


class Method(TypedDict):
    kind: str  # exact-linear | linear-member | occlusion
    detail: str


class Explanation(AnswerDict):
    method: Method
    explanations: list[TrackExplanation]
    neighbors: list[Neighbor]


# --------------------------------------------------------------------------- linear models


@dataclass
class _Linear:
    """A fitted linear TF-IDF text classifier seen as (features, weights per fitted class)."""

    features: Any
    weights: np.ndarray  # (n_fitted_classes, n_features), already scaled
    column: dict[int, int]  # label index -> row of ``weights``
    names: np.ndarray  # feature names
    segments: list[tuple[int, TfidfVectorizer]]  # (first column, vectorizer) of each TF-IDF block
    description: str


def _vectorizers(features) -> list[tuple[int, TfidfVectorizer]] | None:
    if isinstance(features, TfidfVectorizer):
        return [(0, features)]
    if isinstance(features, FeatureUnion) and all(isinstance(t, TfidfVectorizer) for _, t in features.transformer_list):
        segments, start = [], 0
        for _, vectorizer in features.transformer_list:
            segments.append((start, vectorizer))
            start += len(vectorizer.vocabulary_)
        return segments
    return None


def _class_weights(classifier) -> tuple[np.ndarray, np.ndarray, str] | None:
    scale, what = 1.0, "coefficient"
    if isinstance(classifier, TemperatureScaled):
        scale, classifier = 1.0 / classifier.temperature_, classifier.estimator_
        what = f"coefficient / temperature {1 / scale:g}"
    if hasattr(classifier, "coef_"):
        weights = np.asarray(classifier.coef_, dtype=np.float64)
        if weights.shape[0] == 1 and len(classifier.classes_) == 2:  # a binary model scores one class
            weights = np.vstack([-weights[0], weights[0]])
    elif hasattr(classifier, "feature_log_prob_"):
        weights = np.asarray(classifier.feature_log_prob_, dtype=np.float64)
        weights = weights - weights.mean(axis=0, keepdims=True)
        what = f"log-probability (centred over labels){'' if scale == 1 else f' / temperature {1 / scale:g}'}"
    else:
        return None
    return weights * scale, np.asarray(classifier.classes_), what


def linear_view(model) -> _Linear | None:
    """The linear TF-IDF view of a TextClassifier, or None when it is not linear on TF-IDF terms."""
    if not isinstance(model, TextClassifier):
        return None
    segments = _vectorizers(model.features_)
    found = _class_weights(model.classifier_)
    if segments is None or found is None:
        return None
    weights, classes, what = found
    names = np.asarray(model.features_.get_feature_names_out(), dtype=object)
    if weights.shape[1] != len(names):
        return None
    return _Linear(
        model.features_,
        weights,
        {int(c): i for i, c in enumerate(classes.tolist())},
        names,
        segments,
        f"{what} × tf-idf value",
    )


def _linear_member(classifier) -> tuple[str, float, _Linear] | None:
    members = getattr(classifier, "members_", None)  # a fitted ensemble's members
    if not members:
        return None
    for name, model, weight in sorted(members, key=lambda m: -m[2]):
        view = linear_view(model)
        if view is not None:
            return name, weight, view
    return None


# --------------------------------------------------------------------------- explainer


class Explainer:
    """The explanation method of one predictor (built once per predictor, then cached)."""

    def __init__(self, predictor):
        self.predictor = predictor
        self.linear = linear_view(predictor.classifier)
        candidate = predictor.card.candidate or "the model"
        if self.linear is not None:
            self.method = Method(kind="exact-linear", detail=f"{candidate}: {self.linear.description}")
            return
        member = _linear_member(predictor.classifier)
        if member is not None:
            name, weight, self.linear = member
            self.method = Method(
                kind="linear-member",
                detail=(
                    f"ensemble {candidate}: only its linear TF-IDF member {name} (weight {weight:.2f} in the "
                    f"ensemble) is explained, the other members' part of the answer is not in these terms; "
                    f"{self.linear.description}"
                ),
            )
            return
        self.method = Method(
            kind="occlusion",
            detail=(
                f"{candidate} is not linear on words: a word's weight is the drop of the track's probability when "
                f"every occurrence of it is removed (the {MAX_OCCLUSION} most frequent content words are tried)"
            ),
        )

    def proba_and_features(self, text: str):
        """(probabilities, TF-IDF row) of one model text when the explained model is the predictor's own
        classifier: one feature transform serves both — ``TextClassifier.predict_proba`` is exactly
        ``proba_from_features(features.transform(texts))``. (None, None) otherwise."""
        classifier = self.predictor.classifier
        if (
            self.linear is None
            or not isinstance(classifier, TextClassifier)
            or classifier.features_ is not self.linear.features
        ):
            return None, None
        with sklearn.config_context(skip_parameter_validation=True):
            row = classifier.features_.transform([text])
            return classifier.proba_from_features(row), row

    def terms(
        self, abstract: str, text: str, labels: list[int], n_terms: int, proba: np.ndarray, title: str | None, row=None
    ) -> list[list[Term]]:
        if self.linear is not None:
            return self._linear_terms(abstract, text, labels, n_terms, row)
        return self._occlusion_terms(abstract, title, labels, n_terms, proba)

    def _linear_terms(self, abstract: str, text: str, labels: list[int], n_terms: int, row=None) -> list[list[Term]]:
        linear = self.linear
        if row is None:
            with sklearn.config_context(skip_parameter_validation=True):
                row = linear.features.transform([text])
        row = row.tocsr()
        cols, values = row.indices, row.data
        spans = _Spans(abstract, linear)
        out: list[list[Term]] = []
        for label in labels:
            if label not in linear.column or len(cols) == 0:
                out.append([])
                continue
            contribution = linear.weights[linear.column[label], cols] * values
            best = np.argsort(-contribution, kind="stable")[:n_terms]
            out.append(
                [
                    Term(
                        term=str(linear.names[cols[i]]).split("__", 1)[-1],
                        weight=round(float(contribution[i]), 5),
                        spans=spans.of(int(cols[i])),
                    )
                    for i in best.tolist()
                    if contribution[i] > 0
                ]
            )
        return out

    def _occlusion_terms(
        self, abstract: str, title: str | None, labels: list[int], n_terms: int, proba: np.ndarray
    ) -> list[list[Term]]:
        words = content_words(abstract)[:MAX_OCCLUSION]
        if not words:
            return [[] for _ in labels]
        variants = [_without(abstract, w) or "." for w in words]
        occluded = self.predictor.predict_proba(variants, [title] * len(variants))
        out = []
        for label in labels:
            drop = proba[label] - occluded[:, label]
            best = np.argsort(-drop, kind="stable")[:n_terms]
            out.append(
                [
                    Term(
                        term=words[i],
                        weight=round(float(drop[i]), 5),
                        spans=word_spans(abstract, [words[i]], str.lower),
                    )
                    for i in best.tolist()
                    if drop[i] > 0
                ]
            )
        return out


class _Spans:
    """Where the terms of a linear model occur in one abstract: the abstract is tokenized once per TF-IDF
    block (the vectorizer's token pattern; its lower-casing and accent stripping applied per token)."""

    def __init__(self, abstract: str, linear: _Linear):
        self.abstract, self.linear = abstract, linear
        self._tokens: dict[int, dict[str, list[list[int]]]] = {}

    def of(self, column: int) -> list[list[int]]:
        start, vectorizer = next((s, v) for s, v in reversed(self.linear.segments) if s <= column)
        term = str(self.linear.names[column]).split("__", 1)[-1]
        if vectorizer.analyzer != "word":  # a character n-gram: where it occurs
            needle = term.strip().lower()
            return (
                [[m.start(), m.end()] for m in re.finditer(re.escape(needle), self.abstract.lower())] if needle else []
            )
        tokens = self._tokens.get(start)
        if tokens is None:
            preprocess = vectorizer.build_preprocessor()
            tokens = self._tokens[start] = {}
            for m in _WORD.finditer(self.abstract):
                tokens.setdefault(preprocess(m.group()), []).append([m.start(), m.end()])
        return sorted(span for word in term.split(" ") for span in tokens.get(word, []))


def word_spans(abstract: str, words: list[str], preprocess) -> list[list[int]]:
    """[start, end) of every token of ``abstract`` whose preprocessed form is one of ``words``."""
    wanted = set(words)
    return [[m.start(), m.end()] for m in _WORD.finditer(abstract) if preprocess(m.group()) in wanted]


def content_words(abstract: str) -> list[str]:
    """The abstract's distinct lower-cased words that are not stop words, most frequent first."""
    counts = Counter(
        w
        for w in (m.group().lower() for m in _WORD.finditer(abstract))
        if w not in ENGLISH_STOP_WORDS and not w.isdigit()
    )
    return [w for w, _ in counts.most_common()]


def _without(abstract: str, word: str) -> str:
    return " ".join(re.sub(rf"(?iu)\b{re.escape(word)}\b", " ", abstract).split())


_EXPLAINERS: weakref.WeakKeyDictionary[Any, Explainer] = weakref.WeakKeyDictionary()


def explainer_for(predictor) -> Explainer:
    explainer = _EXPLAINERS.get(predictor)
    if explainer is None:
        explainer = _EXPLAINERS[predictor] = Explainer(predictor)
    return explainer


def explain(
    predictor: TrackPredictor,
    abstract: str,
    title: str | None = None,
    top_k: int = 3,
    n_terms: int = DEFAULT_TERMS,
    n_neighbors: int = DEFAULT_NEIGHBORS,
) -> Explanation:
    """The predictor's answer for one abstract, the terms behind each of its ``top_k`` tracks, and the
    ``n_neighbors`` most similar labeled training abstracts (none when the artifact has no index)."""
    from papertrack.features.text import model_text

    explainer = explainer_for(predictor)
    text = model_text(abstract, title, predictor.use_title)
    proba, row = explainer.proba_and_features(text) if abstract.strip() else (None, None)
    if proba is None:
        proba = predictor.predict_proba([abstract], [title])
    answer = predictor.rank(proba, min(top_k, predictor.space.n_labels))[0]  # a model with fewer labels: all
    label_index = {label: i for i, label in enumerate(predictor.space.labels)}
    labels = [label_index[t["label"]] for t in answer["tracks"]]
    terms = explainer.terms(abstract, text, labels, n_terms, proba[0], title, row)
    index = getattr(predictor, "neighbors", None)
    explanation: Explanation = {
        **answer,
        "method": explainer.method,
        "explanations": [TrackExplanation(label=t["label"], terms=ts) for t, ts in zip(answer["tracks"], terms)],
        "neighbors": index.query(abstract, n_neighbors) if index is not None and n_neighbors else [],
    }
    return explanation
