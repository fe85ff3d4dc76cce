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
