"""NativeMixture (models/native_mixture.py): the answer is the mixture of its two fitted models, an explanation
names the linear member it explains with its share, and the neighbour features are the base model's."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import ComplementNB

from papertrack.features.text import tfidf
from papertrack.models.artifact import TrackPredictor
from papertrack.models.card import ModelCard
from papertrack.models.ensemble import WeightedEnsemble
from papertrack.models.estimators import TemperatureScaled, TextClassifier
from papertrack.models.explain import explain
from papertrack.models.hierarchy import LabelSpace
from papertrack.models.native_mixture import NativeMixture
from tests.models.test_explain import ABSTRACT, corpus


def _fitted(alpha: float):
    texts, labels = corpus()
    space = LabelSpace.from_labels(labels)
    y = space.encode(labels)
    n = space.n_labels
    base = WeightedEnsemble(
        [
            ("tfidf-word-logreg", TextClassifier(tfidf("word"), LogisticRegression(C=10, max_iter=300), n), 0.7),
            (
                "tfidf-word-cnb",
                TextClassifier(tfidf("word"), TemperatureScaled(ComplementNB(), random_state=0), n),
                0.3,
            ),
        ],
        n,
        rule="geometric",
    ).fit(texts, y)
    own = slice(0, None, 3)  # a third of the papers: the "own" ones
    native = TextClassifier(tfidf("word"), LogisticRegression(C=1, max_iter=300), n).fit(texts[own], y[own])
    return NativeMixture(base, native, alpha, n, "tfidf-word-logreg (own papers)"), space


def test_the_answer_is_the_weighted_mean_of_both_models():
    model, space = _fitted(0.4)
    texts = [ABSTRACT, "offline policy reward agent", "convex gradient rate"]
    expected = 0.6 * model.base.predict_proba(texts) + 0.4 * model.native.predict_proba(texts)
    np.testing.assert_allclose(model.predict_proba(texts), expected)
    np.testing.assert_allclose(model.predict_proba(texts).sum(axis=1), 1.0)
    assert model.predict(texts).tolist() == expected.argmax(axis=1).tolist()
    # the base alone and the native alone differ on these texts: the mixture is neither of them
    assert not np.allclose(model.predict_proba(texts), model.base.predict_proba(texts))


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.2])
def test_a_share_outside_0_1_exclusive_is_refused(alpha):
    with pytest.raises(ValueError, match="strictly within"):
        NativeMixture(object(), object(), alpha, 3)


def test_members_carry_each_sides_share_and_an_explanation_names_the_largest_linear_one():
    model, space = _fitted(0.6)
    members = {name: w for name, _, w in model.members_}
    assert members == pytest.approx(
        {"tfidf-word-logreg": 0.4 * 0.7, "tfidf-word-cnb": 0.4 * 0.3, "tfidf-word-logreg (own papers)": 0.6}
    )
    card = ModelCard(candidate="ensemble-tfidf", family="ensemble", data_digest="d", run_id="r")
    result = explain(TrackPredictor(model, space, card), ABSTRACT)
    assert result["method"]["kind"] == "linear-member"
    assert "tfidf-word-logreg (own papers) (weight 0.60" in result["method"]["detail"]
    assert "attention" in [t["term"] for t in result["explanations"][0]["terms"]]


def test_text_features_are_the_base_models():
    model, _ = _fitted(0.3)
    rows = model.text_features([ABSTRACT])
    np.testing.assert_allclose(rows.toarray(), model.base.text_features([ABSTRACT]).toarray())
