"""Classifiers answer over the full label space, even when a fold lacks some labels."""

import numpy as np
import pytest

from papertrack.models.catalogue import CANDIDATES, select
from papertrack.models.hierarchy import LabelSpace
from papertrack.training.cv import fold_indices, stratification_groups

TEXTS = [
    "graph neural networks message passing",
    "message passing on graphs with attention",
    "policy gradient reinforcement learning agent",
    "reward shaping for the agent policy",
    "differential privacy of gradient descent",
    "private learning under privacy budgets",
] * 3
LABELS = ["DL · Graph", "DL · Graph", "RL · Deep RL", "RL · Deep RL", "SA · Privacy", "SA · Privacy"] * 3


@pytest.mark.parametrize("name", ["tfidf-word-logreg", "tfidf-word-svm", "tfidf-word-cnb", "majority-baseline"])
def test_candidates_give_full_label_space_distributions(name):
    space = LabelSpace.from_labels(LABELS + ["ZZ · never seen"])
    y = space.encode(LABELS)
    model = CANDIDATES[name].build(space.n_labels, 0)
    # min_df=2 features need repeated words; the toy corpus repeats each text three times
    model.fit(TEXTS, y)
    proba = model.predict_proba(["attention on graphs", "an agent learns a policy"])
    assert proba.shape == (2, space.n_labels)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (proba >= 0).all()
    assert (proba[:, space.labels.index("ZZ · never seen")] == 0).all()
    if name != "majority-baseline":
        assert space.labels[proba[0].argmax()] == "DL · Graph"
        assert space.labels[proba[1].argmax()] == "RL · Deep RL"


def test_rare_labels_are_stratified_by_area():
    labels = ["A · x"] * 10 + ["A · rare"] * 2 + ["B · y"] * 10 + ["B · rare"]
    space = LabelSpace.from_labels(labels)
    y = space.encode(labels)
    groups = stratification_groups(y, space, folds=5)
    rare_a = groups[y == space.labels.index("A · rare")]
    assert (rare_a == space.n_labels + space.areas.index("A")).all()
    assert (groups[y == space.labels.index("A · x")] == space.labels.index("A · x")).all()
    folds = fold_indices(y, space, folds=5, seed=0)
    test_rows = np.concatenate([test for _, test in folds])
    assert sorted(test_rows.tolist()) == list(range(len(labels)))  # every row tested exactly once
    for train, _test in folds:  # every frequent label is in every training part
        assert {space.labels.index("A · x"), space.labels.index("B · y")} <= set(y[train].tolist())


def test_unknown_candidate_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown candidate.*nope"):
        select(["nope"])


def _tfidf_members(n_labels: int):
    return [
        (name, CANDIDATES[name].build(n_labels, 0), w)
        for name, w in (("tfidf-word-cnb", 0.5), ("tfidf-word-svm", 0.5), ("tfidf-word12-cnb", 0.0))
    ]


@pytest.mark.parametrize("kind", ["classifier", "ensemble"])
def test_composite_estimators_follow_the_scikit_learn_rules(kind):
    from sklearn.base import clone

    from papertrack.features.embeddings import EmbeddingFeatures, embedding_steps
    from papertrack.models.ensemble import WeightedEnsemble

    space = LabelSpace.from_labels(LABELS)
    y = space.encode(LABELS)
    n = space.n_labels
    if kind == "classifier":
        model = CANDIDATES["tfidf-word-logreg"].build(n, 0)
        given = {"features": model.features, "classifier": model.classifier}
    else:
        members = _tfidf_members(n)
        model = WeightedEnsemble(members, n, rule="geometric")
        given = {"members": members}
    for name, value in given.items():  # params are stored as given
        assert model.get_params(deep=False)[name] is value
    copy = clone(model)
    assert copy is not model and copy.get_params(deep=False).keys() == model.get_params(deep=False).keys()

    fitted = model.fit(TEXTS, y)
    assert fitted is model
    # fit never changes what was passed in: the given feature steps stay unfitted
    steps = [model.features] if kind == "classifier" else [m.features for _, m, _ in given["members"]]
    assert not any(hasattr(step, "vocabulary_") for step in steps)
    assert not hasattr(copy, "members_") and not hasattr(copy, "classifier_")
    refit = clone(model).fit(TEXTS, y)  # a clone of a fitted model is unfitted, and fits to the same answer
    np.testing.assert_allclose(refit.predict_proba(TEXTS[:4]), model.predict_proba(TEXTS[:4]))
    if kind == "ensemble":
        assert [name for name, _, _ in model.members_] == ["tfidf-word-cnb", "tfidf-word-svm"]  # weight 0: not fitted
        assert model.members_[0][1].features_ is model.members_[1][1].features_  # one shared fitted step

    # the embedding steps are found through the parameter protocol, at any depth
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from papertrack.models.estimators import TextClassifier

    inner = EmbeddingFeatures("minilm")
    nested = WeightedEnsemble(
        [
            ("a", model, 1.0),
            ("b", CANDIDATES["emb-minilm-knn"].build(n, 0), 1.0),
            ("c", TextClassifier(make_pipeline(inner), LogisticRegression(), n), 1.0),
        ],
        n,
    )
    found = embedding_steps(nested)
    assert len(found) == 2 and found[1] is inner and all(isinstance(f, EmbeddingFeatures) for f in found)
    assert embedding_steps(model) == []


def test_fitted_weights_are_column_major_so_predict_reads_them_in_place():
    """X @ W.T with W row-major made scipy copy W on every call (17 of 20 ms per /predict for a bigram NB)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import ComplementNB

    from papertrack.models.estimators import TemperatureScaled, TextClassifier

    texts = [f"graph nodes message passing {i}" for i in range(20)] + [f"reward policy agent {i}" for i in range(20)]
    y = np.array([0] * 20 + [1] * 20)
    for classifier, attr in ((ComplementNB(alpha=0.3), "feature_log_prob_"), (LogisticRegression(), "coef_")):
        model = TextClassifier(TfidfVectorizer(), classifier, 3).fit(texts, y)
        assert getattr(model.classifier_, attr).flags["F_CONTIGUOUS"]
        plain = classifier.fit(TfidfVectorizer().fit_transform(texts), y)
        np.testing.assert_array_equal(
            model.predict_proba(texts)[:, :2], plain.predict_proba(TfidfVectorizer().fit(texts).transform(texts))
        )
    scaled = TextClassifier(TfidfVectorizer(), TemperatureScaled(ComplementNB()), 2).fit(texts, y)
    assert scaled.classifier_.estimator_.feature_log_prob_.flags["F_CONTIGUOUS"]
    # naive Bayes' training counts (half its size, read only by partial_fit) are not kept; the answers above are
    # the plain model's
    nb = TextClassifier(TfidfVectorizer(), ComplementNB(alpha=0.3), 3).fit(texts, y)
    assert not hasattr(nb.classifier_, "feature_count_") and not hasattr(
        scaled.classifier_.estimator_, "feature_count_"
    )
    assert hasattr(ComplementNB().fit(TfidfVectorizer().fit_transform(texts), y), "feature_count_")
