"""Metrics on tiny hand-checked examples, and the label hierarchy roll-up."""

import numpy as np
import pytest

from papertrack import registry
from papertrack.models.hierarchy import LabelSpace
from papertrack.training import scoring as metrics

SPACE = LabelSpace.from_labels(["A · x", "A · y", "B · z", "B"])  # sorted: A · x, A · y, B, B · z


def test_label_space_orders_labels_and_maps_areas():
    assert SPACE.labels == ("A · x", "A · y", "B", "B · z")
    assert SPACE.areas == ("A", "B")
    assert SPACE.label_area.tolist() == [0, 0, 1, 1]
    assert SPACE.subareas == ("x", "y", None, "z")
    assert SPACE.hierarchy() == {"A": ["A · x", "A · y"], "B": ["B", "B · z"]}


def test_label_space_normalises_arrow_labels_and_rejects_unknown():
    space = LabelSpace.from_labels(["A->x", "A · x"])
    assert space.areas == ("A",)
    with pytest.raises(ValueError, match="not in the label space"):
        SPACE.encode(["C · w"])


def test_area_probability_is_sum_of_its_labels():
    proba = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.0, 0.25]])
    area = SPACE.area_proba(proba)
    np.testing.assert_allclose(area, [[0.3, 0.7], [0.75, 0.25]])
    np.testing.assert_allclose(area.sum(axis=1), proba.sum(axis=1))


def test_top_k_accuracy_by_hand():
    proba = np.array(
        [
            [0.5, 0.3, 0.2, 0.0],  # true 1: rank 2
            [0.1, 0.2, 0.3, 0.4],  # true 0: rank 4
            [0.7, 0.1, 0.1, 0.1],
        ]
    )  # true 0: rank 1
    y = np.array([1, 0, 0])
    assert metrics.top_k_accuracy(proba, y, 1) == pytest.approx(1 / 3)
    assert metrics.top_k_accuracy(proba, y, 2) == pytest.approx(2 / 3)
    assert metrics.top_k_accuracy(proba, y, 3) == pytest.approx(2 / 3)
    assert metrics.top_k_accuracy(proba, y, 4) == pytest.approx(1.0)


def test_macro_f1_by_hand():
    # class 0: tp=1 fp=1 fn=0 -> p=.5 r=1 f1=2/3; class 1: tp=1 fp=0 fn=1 -> p=1 r=.5 f1=2/3
    assert metrics.macro_f1(np.array([0, 1, 1]), np.array([0, 1, 0])) == pytest.approx(2 / 3)


def test_log_loss_by_hand():
    proba = np.array([[0.5, 0.5], [0.25, 0.75]])
    assert metrics.log_loss(proba, np.array([0, 1])) == pytest.approx(-(np.log(0.5) + np.log(0.75)) / 2)
    assert metrics.log_loss(np.array([[1.0, 0.0]]), np.array([1])) == pytest.approx(-np.log(1e-15))


def test_top_k_and_log_loss_equal_scikit_learns_without_ties_or_zero_probabilities():
    """scikit-learn's top_k_accuracy_score and log_loss (told every label with labels=: some are absent from the
    truth) give the same numbers wherever no two probabilities of a row tie and no true label has probability 0;
    there they differ on purpose (the next test)."""
    from sklearn.metrics import log_loss as sklearn_log_loss
    from sklearn.metrics import top_k_accuracy_score

    rng = np.random.default_rng(3)
    for n_labels, n in ((4, 30), (7, 50), (12, 9)):
        proba = rng.dirichlet(np.ones(n_labels), size=n)
        y = rng.integers(0, n_labels - 2, size=n)  # the last two labels are never the truth
        labels = np.arange(n_labels)
        for k in (1, 2, 3):
            assert metrics.top_k_accuracy(proba, y, k) == top_k_accuracy_score(y, proba, k=k, labels=labels)
        assert metrics.log_loss(proba, y) == pytest.approx(sklearn_log_loss(y, proba, labels=labels), rel=1e-12)


def test_where_scikit_learn_differs_ties_go_to_the_lower_index_and_zero_costs_log_1e15():
    """Why scoring.py keeps its own two: a tie goes to the lower label index, as argmax does (the prediction
    macro-F1 scores), where top_k_accuracy_score ranks the higher index first; and a true label with probability 0
    costs -log(1e-15) = 34.54, where log_loss clips at the float64 epsilon (36.04)."""
    from sklearn.metrics import log_loss as sklearn_log_loss
    from sklearn.metrics import top_k_accuracy_score

    uniform, y = np.full((2, 4), 0.25), np.array([0, 0])
    assert metrics.top_k_accuracy(uniform, y, 1) == 1.0 and uniform.argmax(axis=1).tolist() == [0, 0]
    assert top_k_accuracy_score(y, uniform, k=1, labels=np.arange(4)) == 0.0
    certain_wrong = np.array([[1.0, 0.0, 0.0]])
    assert metrics.log_loss(certain_wrong, np.array([1])) == pytest.approx(34.538776, abs=1e-6)
    assert sklearn_log_loss([1], certain_wrong, labels=[0, 1, 2]) == pytest.approx(36.043653, abs=1e-6)


def test_expected_calibration_error_by_hand():
    # two rows at confidence 0.9 (one right, one wrong) and two at 0.6 (both right)
    proba = np.array([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.4, 0.6]])
    y = np.array([0, 1, 0, 1])
    # bin 0.9: acc .5, conf .9 -> .4 ; bin 0.6: acc 1, conf .6 -> .4 ; each half the rows
    assert metrics.expected_calibration_error(proba, y) == pytest.approx(0.4)
    perfect = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert metrics.expected_calibration_error(perfect, np.array([0, 1])) == pytest.approx(0.0)


def test_evaluate_reports_both_levels():
    proba = np.array(
        [
            [0.1, 0.6, 0.2, 0.1],  # true A · x -> top1 wrong label, right area
            [0.0, 0.0, 0.3, 0.7],
        ]
    )  # true B · z -> right
    result = metrics.evaluate(proba, SPACE.encode(["A · x", "B · z"]), SPACE)
    assert result["label_top1"] == pytest.approx(0.5)
    assert result["label_top3"] == pytest.approx(1.0)
    assert result["area_top1"] == pytest.approx(1.0)
    assert result["area_macro_f1"] == pytest.approx(1.0)
    assert set(result) == {
        "label_top1",
        "label_top3",
        "label_macro_f1",
        "area_top1",
        "area_macro_f1",
        "log_loss",
        "ece",
    }


def test_rank_key_prefers_primary_then_tiebreak():
    a = {"cv_label_top3": 0.8, "cv_label_macro_f1": 0.3}
    b = {"cv_label_top3": 0.8, "cv_label_macro_f1": 0.4}
    c = {"cv_label_top3": 0.79, "cv_label_macro_f1": 0.9}
    assert sorted([a, b, c], key=registry.rank_key, reverse=True) == [b, a, c]


def test_top_k_and_macro_f1_match_a_stable_sort_and_scikit_learn_on_ties_and_absent_classes():
    from sklearn.metrics import f1_score

    from papertrack.training.scoring import macro_f1, top_k_accuracy

    rng = np.random.default_rng(7)
    for _ in range(20):
        n, labels = 200, 12
        proba = np.round(rng.random((n, labels)), 1)  # many ties, some exact zeros
        proba[:, rng.integers(0, labels)] = 0.0  # a label no row can rank above a tie
        y = rng.integers(0, labels - 2, n)  # two labels never true
        for k in (1, 3, 5, labels):
            top = np.argsort(-proba, axis=1, kind="stable")[:, :k]
            assert top_k_accuracy(proba, y, k) == float(np.mean(np.any(top == y[:, None], axis=1)))
        predicted = proba.argmax(axis=1)
        assert macro_f1(y, predicted) == pytest.approx(f1_score(y, predicted, average="macro", zero_division=0))
