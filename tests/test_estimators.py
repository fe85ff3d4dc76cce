"""Classifiers answer over the full label space, even when a fold lacks some labels."""

import numpy as np
import pytest

from papertrack.models.candidates import CANDIDATES, select
from papertrack.models.hierarchy import LabelSpace
from papertrack.training.cv import fold_indices, stratification_groups

TEXTS = ["graph neural networks message passing", "message passing on graphs with attention",
         "policy gradient reinforcement learning agent", "reward shaping for the agent policy",
         "differential privacy of gradient descent", "private learning under privacy budgets"] * 3
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
    for train, test in folds:  # every frequent label is in every training part
        assert {space.labels.index("A · x"), space.labels.index("B · y")} <= set(y[train].tolist())


def test_unknown_candidate_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown candidate.*nope"):
        select(["nope"])
