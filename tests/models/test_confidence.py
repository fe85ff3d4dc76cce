"""Conformal prediction sets and the confident flag (models/confidence.py): their guarantees on synthetic,
perfectly calibrated probabilities, and what the trained artifact carries and logs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from papertrack.models.confidence import (
    aps_scores,
    calibrate,
    conformal_quantile,
    prediction_sets,
    risk_coverage,
    top1_threshold,
)


def covered(proba: np.ndarray, y: np.ndarray, threshold: float) -> np.ndarray:
    """Whether each row's true label is in its prediction set."""
    return np.array([label in s for label, s in zip(y.tolist(), prediction_sets(proba, threshold))])


def calibrated_sample(n: int, labels: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities with a spread of sharpness, and true labels drawn from them (so they are calibrated)."""
    rng = np.random.default_rng(seed)
    sharpness = np.exp(rng.uniform(np.log(0.005), np.log(1.0), size=n))  # from near one-hot to flat
    proba = np.vstack([rng.dirichlet(np.full(labels, s)) for s in sharpness])
    y = np.array([rng.choice(labels, p=p) for p in proba])
    return proba, y


def test_sets_cover_new_rows_at_the_nominal_rate():
    proba, y = calibrated_sample(6000)
    cal, test = slice(0, 3000), slice(3000, None)
    for coverage in (0.8, 0.9, 0.95):
        confidence = calibrate(proba[cal], y[cal], coverage=coverage)
        measured = covered(proba[test], y[test], confidence.set_threshold).mean()
        assert abs(measured - coverage) <= 0.02, (coverage, measured)
        # the cross-conformal estimate computed at calibration agrees with the fresh rows
        assert abs(confidence.empirical_coverage - coverage) <= 0.02
        assert confidence.n_calibration == 3000


def test_sets_are_ranked_prefixes_never_empty_and_longer_when_unsure():
    proba, y = calibrated_sample(2000, seed=1)
    confidence = calibrate(proba, y)
    sets = confidence.sets(proba)
    order = np.argsort(-proba, axis=1, kind="stable")
    assert all(len(s) >= 1 and list(s) == list(order[i, : len(s)]) for i, s in enumerate(sets))
    sizes = np.array([len(s) for s in sets])
    top = proba.max(axis=1)
    assert sizes[top > 0.8].mean() < sizes[top < 0.3].mean()
    # a row is covered exactly when its APS score is within the threshold; a right top label scores 0
    scores = aps_scores(proba, y)
    hit = covered(proba, y, confidence.set_threshold)
    assert np.array_equal(hit, scores <= confidence.set_threshold + 1e-9)
    assert np.all(scores[proba.argmax(axis=1) == y] == 0)


def test_confident_flag_reaches_the_target_precision():
    proba, y = calibrated_sample(6000, seed=2)
    confidence = calibrate(proba[:3000], y[:3000], target_precision=0.85)
    sure = confidence.confident(proba[3000:])
    right = proba[3000:].argmax(axis=1) == y[3000:]
    assert 0.05 < sure.mean() < 0.95
    assert right[sure].mean() >= 0.85 - 0.03
    assert right[~sure].mean() < 0.85
    assert abs(confidence.confident_precision - 0.85) < 0.05


def test_edge_cases():
    assert conformal_quantile(np.array([0.2, 0.4]), 0.9) == 1.0  # too few rows: every label
    proba = np.array([[0.7, 0.2, 0.1, 0.0]])
    assert [list(s) for s in prediction_sets(proba, 1.0)] == [[0, 1, 2, 3]]
    assert [list(s) for s in prediction_sets(proba, 0.5)] == [[0]]  # the top label always
    assert [list(s) for s in prediction_sets(proba, 0.8)] == [[0, 1]]  # 0.7 above the second, 0.9 above the third
    # no threshold reaches the target (the top label is always wrong): never confident below probability 1
    p, labels = calibrated_sample(500, seed=3)
    assert top1_threshold(p, (p.argmax(axis=1) + 1) % p.shape[1], 0.5) == 1.0
    share, risk, _ = risk_coverage(p, labels)
    assert share[-1] == 1.0 and np.isclose(risk[-1], 1 - (p.argmax(axis=1) == labels).mean())
    with pytest.raises(ValueError):
        calibrate(p, labels[:-1])


def test_trained_artifact_answers_sets_and_logs_coverage(trained):
    import mlflow

    from papertrack import store
    from papertrack.models.loading import load_predictor

    result = trained["result"]
    with store.using(trained["store"]):
        predictor, _ = load_predictor(trained["model_uri"])
        pyfunc = mlflow.pyfunc.load_model(trained["model_uri"])  # as MLflow users load it
    confidence = predictor.confidence
    assert confidence is not None
    # calibrated on what the winner was selected on: the fixture has three sources over two years, so the
    # temporal holdout's rows (the ICLR 2025 ones), a fixed expectation rather than the sweep's own branch
    assert confidence.source == result.winner.selection == "temporal holdout"
    n_latest = sum('"year": 2025' in line for line in open(trained["data"], encoding="utf-8"))
    assert n_latest - 2 <= confidence.n_calibration <= n_latest  # (a duplicate abstract is skipped)
    assert confidence.n_calibration == len(result.winner.selection_proba) == len(result.winner.selection_y)
    # within 2 points of nominal on the held-out (temporal) rows
    assert abs(confidence.empirical_coverage - confidence.coverage) <= 0.02

    abstracts = [json.loads(line)["abstract"] for line in open(trained["data"], encoding="utf-8")][:30]
    answers = predictor.predict(abstracts, top_k=3)
    proba = predictor.predict_proba(abstracts)
    for answer, row in zip(answers, proba):
        assert answer["prediction_set"][0] == answer["tracks"][0]["label"]
        assert answer["confident"] == (row.max() >= confidence.top1_threshold)
        assert set(answer) == {"tracks", "areas", "prediction_set", "confident", "taxonomy"}
    frame = pyfunc.predict(__import__("pandas").DataFrame({"abstract": abstracts[:3]}))
    assert list(frame["prediction_set"].iloc[0]) == answers[0]["prediction_set"]

    client = trained["store"].client()
    run = client.get_run(result.winner.run_id)
    assert run.data.metrics["conformal_empirical_coverage"] == pytest.approx(confidence.empirical_coverage)
    assert run.data.metrics["conformal_nominal_coverage"] == pytest.approx(0.9)
    logged = {a.path for a in client.list_artifacts(result.winner.run_id, "plots")}
    assert "plots/risk_coverage.png" in logged


def test_where_no_threshold_reaches_the_target_the_best_reachable_one_is_used_and_said():
    """A hard taxonomy (ICML 2025's re-cut names: no threshold reaches 0.85): confident answers are the most
    precise ones that can be had, the sentence says so with the figure, never "nan"."""
    from papertrack.training.artifact_extras import confident_sentence

    p, clean = calibrated_sample(2000, seed=5)
    rng = np.random.default_rng(5)
    labels = np.where(rng.random(len(clean)) < 0.3, rng.integers(0, p.shape[1], len(clean)), clean)  # 30% relabeled
    right = p.argmax(axis=1) == labels
    hard = calibrate(p, labels, target_precision=0.95)
    assert not hard.target_met and hard.top1_threshold < 1.0
    top = p.max(axis=1)
    assert right[top >= hard.top1_threshold].mean() == pytest.approx(hard.threshold_precision)
    assert hard.threshold_precision > right.mean()  # better than answering every row
    assert hard.confident_share > 0
    sentence = confident_sentence(hard)
    assert sentence.startswith("no threshold reaches top-1 precision 0.95 here; confident when top-1 >= ")
    assert f"the best reachable (precision {hard.threshold_precision:.3f}" in sentence and "nan" not in sentence
    met = calibrate(p, clean)
    assert met.target_met and confident_sentence(met).startswith(f"confident when top-1 >= {met.top1_threshold:.3f}")
