"""The fast prediction path (models/fast_predict.py) answers what scikit-learn's own path answers.

The reference here is plain scikit-learn on the same fitted parts: each ``TfidfVectorizer.transform``,
``LogisticRegression.predict_proba``, and for the temperature-scaled members a softmax of
``LinearSVC.decision_function`` / ``ComplementNB.predict_log_proba`` over the fitted temperature — never
papertrack's prediction code.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import ComplementNB
from sklearn.svm import LinearSVC

from papertrack.features.text import tfidf
from papertrack.models.catalogue import CANDIDATES
from papertrack.models.ensemble import WeightedEnsemble
from papertrack.models.estimators import TemperatureScaled
from papertrack.models.fast_predict import tfidf_rows
from papertrack.models.hierarchy import LabelSpace

FIT_LABELS = 12
MEMBERS = {"tfidf-word-logreg": 0.5, "tfidf-word-svm": 0.2, "tfidf-word-cnb": 0.1, "tfidf-word12-cnb": 0.2}
ODD_TEXTS = [
    "",  # no token at all
    "the and of which",  # stop words only
    "Transformers",  # one token: no bigram
    "Café naïve Schrödinger équations über Ångström",  # accents (NFKD, combining marks dropped)
    "İSTANBUL ﬁnite-sample Ⅻ ２０２５ résumé",  # lowercasing that adds a combining dot, ligature, full-width
    "深度学习 模型 graph neural networks 图神经网络",  # other scripts next to vocabulary words
    "graph neural graph neural graph neural networks networks",  # repeated unigrams and bigrams
    "snake_case tokens_with_underscores a1 b2 x",  # \\w includes digits and underscores; 1-letter tokens go
    "GRAPH Neural\tNetworks\nand   REINFORCEMENT-learning; policy/gradient (PPO).",
    "graph\x1cneural\x00networks\x7fpolicy~gradient",  # ASCII control characters between words
]


def _abstracts(path, per_label: int | None = None) -> tuple[list[str], list[str]]:
    texts, labels, taken = [], [], defaultdict(int)
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if per_label is not None and taken[record["label"]] >= per_label:
                continue
            taken[record["label"]] += 1
            texts.append(record["abstract"])
            labels.append(record["label"])
    return texts, labels


@pytest.fixture(scope="module")
def shared_fit(data_dir):
    """ensemble-tfidf's four members, fitted on a stratified part of the two 2024 sources: the first
    :data:`FIT_LABELS` labels (the multinomial logistic regression's fit grows with labels x vocabulary; the
    arithmetic checked here is the same for any number of labels), 8 abstracts of each per source."""
    texts, labels = [], []
    for name in ("iclr2024_topics.jsonl", "icml2024_topics.jsonl"):
        part_texts, part_labels = _abstracts(data_dir / name, per_label=8)
        texts += part_texts
        labels += part_labels
    kept = set(sorted(set(labels))[:FIT_LABELS])
    texts, labels = [t for t, y in zip(texts, labels) if y in kept], [y for y in labels if y in kept]
    space = LabelSpace.from_labels(labels)
    members = [(name, CANDIDATES[name].build(space.n_labels, 0), w) for name, w in MEMBERS.items()]
    return WeightedEnsemble(members, space.n_labels, rule="geometric").fit(texts, space.encode(labels))


def sklearn_member_proba(ensemble: WeightedEnsemble, texts: list[str]) -> list[np.ndarray]:
    """Every member's probabilities over the full label space, by scikit-learn's own methods."""
    probas = []
    for _, member, _ in ensemble.members_:
        matrix = member.features_.transform(texts)
        classifier = member.classifier_
        if isinstance(classifier, TemperatureScaled):
            model = classifier.estimator_
            assert isinstance(model, LinearSVC | ComplementNB)
            scores = (
                model.decision_function(matrix) if isinstance(model, LinearSVC) else model.predict_log_proba(matrix)
            )
            proba = softmax(scores / classifier.temperature_, axis=1)
        else:
            assert isinstance(classifier, LogisticRegression)
            proba = classifier.predict_proba(matrix)
        full = np.zeros((len(texts), ensemble.n_labels))
        full[:, classifier.classes_] = proba
        probas.append(full)
    return probas


def assert_same_proba(fast: np.ndarray, reference: np.ndarray) -> None:
    # the features are float32: scikit-learn's own probabilities are exact to about 1e-7, and the fast path's rows
    # are renormalised to sum to 1 (papertrack.models.estimators.expand_proba)
    np.testing.assert_allclose(fast, reference, rtol=0, atol=1e-6)
    top = 5
    np.testing.assert_array_equal(
        np.argsort(-fast, axis=1, kind="stable")[:, :top], np.argsort(-reference, axis=1, kind="stable")[:, :top]
    )


def test_members_equal_sklearn_on_next_years_abstracts_batch_and_one_by_one(shared_fit, data_dir):
    texts, _ = _abstracts(data_dir / "iclr2025_dev_topics.jsonl")
    texts = texts[:300] + ODD_TEXTS
    reference = sklearn_member_proba(shared_fit, texts)
    for fast, expected in zip(shared_fit.member_proba(texts), reference):
        assert_same_proba(fast, expected)
    one_by_one = [shared_fit.member_proba([text]) for text in texts[::7]]
    for k, expected in enumerate(reference):
        assert_same_proba(np.vstack([rows[k] for rows in one_by_one]), expected[::7])


def test_single_classifier_equals_sklearn(shared_fit):
    texts = ["Message passing graph neural networks on molecules.", *ODD_TEXTS]
    for k, (_, member, _) in enumerate(shared_fit.members_):
        assert_same_proba(member.predict_proba(texts), sklearn_member_proba(shared_fit, texts)[k])


def test_tfidf_rows_equal_the_vectorizers_transform(shared_fit, data_dir):
    texts = _abstracts(data_dir / "iclr2025_dev_topics.jsonl")[0][:200] + ODD_TEXTS
    steps = [features for features, _ in shared_fit.groups_]
    assert sorted(step.ngram_range for step in steps) == [(1, 1), (1, 2)]  # word and word-1/2-gram, one pass
    for fast, step in zip(tfidf_rows(steps, texts), steps):
        expected = step.transform(texts)
        assert fast.shape == expected.shape and fast.has_sorted_indices
        np.testing.assert_array_equal(fast.indptr, expected.indptr)
        np.testing.assert_array_equal(fast.indices, expected.indices)
        np.testing.assert_allclose(fast.data, expected.data, rtol=0, atol=1e-12)


def test_a_refitted_vectorizer_is_not_answered_from_the_old_vocabulary():
    texts = ["graph neural networks on graphs", "policy gradient for agents", "graph policy networks"] * 2
    vectorizer = tfidf("word12").fit(texts)
    tfidf_rows([vectorizer], texts)  # indexes the first vocabulary
    other = ["convex optimization rates", "stochastic convex optimization", "rates of stochastic descent"] * 2
    vectorizer.fit(other)
    fast = tfidf_rows([vectorizer], other)[0]
    np.testing.assert_allclose(fast.toarray(), vectorizer.transform(other).toarray(), rtol=0, atol=1e-12)


def test_other_features_and_inputs_go_through_sklearn():
    texts = ["graph neural networks on graphs", "policy gradient for agents", "graph policy networks"] * 2
    char = tfidf("char").fit(texts)
    custom = TfidfVectorizer(token_pattern=r"\S+").fit(texts)
    fast_char, fast_custom = tfidf_rows([char, custom], texts)
    np.testing.assert_array_equal(fast_char.toarray(), char.transform(texts).toarray())
    np.testing.assert_array_equal(fast_custom.toarray(), custom.transform(texts).toarray())
    word = tfidf("word").fit(texts)
    as_bytes = [text.encode("utf-8") for text in texts]  # scikit-learn decodes bytes; not this module's case
    np.testing.assert_array_equal(tfidf_rows([word], as_bytes)[0].toarray(), word.transform(as_bytes).toarray())
