"""The drift report: how far a dump is from the training data, against what the holdout showed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from papertrack.models.artifact import TrackPredictor
from papertrack.models.drift import DumpStats, drift_report, js_distance, unsure
from tests.synthetic_corpus import TOPICS, corpus, fitted_predictor, paper


@pytest.fixture(scope="module")
def fitted():
    return fitted_predictor(per_label=30, seed=0)


def _report(predictor: TrackPredictor, texts: list[str]) -> dict:
    profile = predictor.training_profile
    stats = DumpStats.for_profile(profile)
    stats.add_answers(profile, predictor.predict(texts), texts)
    return drift_report(stats, profile)


def test_js_distance_is_zero_for_equal_and_one_for_disjoint_distributions():
    assert js_distance([1, 2, 3], [2, 4, 6]) == pytest.approx(0.0, abs=1e-9)
    assert js_distance([1, 0], [0, 1]) == pytest.approx(1.0)
    assert js_distance([0, 0], [1, 1]) == 0.0


def test_profile_holds_training_counts_vocabulary_and_holdout(fitted):
    predictor, texts, labels = fitted
    profile = predictor.training_profile
    assert profile.label_counts.tolist() == [labels.count(label) for label in profile.labels]
    assert profile.area_counts.sum() == len(texts) == profile.n
    assert {"attention", "graph", "posterior"} <= profile.vocabulary and "the" not in profile.vocabulary
    assert 0 < profile.unsure_below < 1
    assert unsure(profile.holdout_top1, profile).mean() == pytest.approx(0.5, abs=0.02)


def test_a_dump_equal_to_the_training_data_shows_no_drift(fitted):
    predictor, texts, _ = fitted
    report = _report(predictor, texts)
    assert report["records"] == len(texts)
    assert report["label_js"] < 0.05 and report["area_js"] < 0.05
    assert report["oov_share"] <= report["holdout"]["oov_share"] and report["oov_share"] < 0.01
    assert report["unsure_share"] <= 0.5  # the refit model is at least as sure on its own training data
    assert report["outside"] == [] and report["warning"] is None


def test_a_fresh_dump_from_the_same_topics_stays_within_the_holdout_range(fitted):
    predictor, _, _ = fitted
    fresh, _ = corpus(per_label=20, seed=99)
    report = _report(predictor, fresh)
    assert report["label_js"] <= report["expected_at_this_size"]["label_js"]["high"]
    assert report["area_js"] <= report["expected_at_this_size"]["area_js"]["high"]
    assert report["warning"] is None


def test_a_single_area_dump_is_far_and_warned_about(fitted):
    predictor, _, _ = fitted
    rng = np.random.default_rng(5)
    words = (
        TOPICS["Deep Learning · Attention Mechanisms"].split() + TOPICS["Deep Learning · Graph Neural Networks"].split()
    )
    dump = [paper(words, rng) for _ in range(60)]
    report = _report(predictor, dump)
    assert report["area_js"] > 0.5 and report["label_js"] > 0.4
    assert {"label_js", "area_js"} <= set(report["outside"])
    assert report["warning"].startswith("this dump is far from the training data")
    moved = report["labels_moved_most"][0]
    assert moved["label"].startswith("Deep Learning") and moved["change"] > 0.2
    deep = next(a for a in report["areas"] if a["area"] == "Deep Learning")
    assert deep["dump_share"] > 0.95
    json.dumps(report)  # plain JSON


def test_unseen_vocabulary_raises_the_out_of_vocabulary_share(fitted):
    predictor, _, _ = fitted
    rng = np.random.default_rng(8)
    alien = "quantum chromodynamics lattice gluon hadron quark plasma collider".split()
    dump = [paper(alien + TOPICS["Theory · Learning Theory"].split(), rng) for _ in range(40)]
    report = _report(predictor, dump)
    assert report["oov_share"] > 0.3 > report["holdout"]["oov_share"]
    assert "oov_share" in report["outside"]


def test_the_profile_survives_save_and_load(fitted, tmp_path):
    predictor, texts, _ = fitted
    loaded = TrackPredictor.load(predictor.save(tmp_path / "p.pkl"))
    assert loaded.training_profile.vocabulary == predictor.training_profile.vocabulary


def test_label_command_prints_and_writes_the_drift_report(trained, tmp_path, data_dir):
    """The sweep stores the profile at refit; `papertrack label` reports drift beside its output."""
    from typer.testing import CliRunner

    from papertrack.cli import app

    out = tmp_path / "labeled.jsonl"
    dump = data_dir / "samples" / "labeled_dump.txt"
    result = CliRunner().invoke(app, ["label", str(dump), "-o", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "labeled.drift.json").read_text(encoding="utf-8"))
    rows = out.read_text(encoding="utf-8").splitlines()
    assert report["records"] == len(rows) > 0
    assert 0 <= report["label_js"] <= 1 and 0 <= report["oov_share"] < 1
    assert "drift vs training data" in result.output and f"label JS {report['label_js']:.3f}" in result.output
    # "unsure" is the answers' "not confident": the same threshold for the dump and the holdout
    from papertrack import store
    from papertrack.models.loading import load_predictor

    with store.using(trained["store"]):
        predictor, _ = load_predictor(trained["model_uri"])
    assert predictor.training_profile.unsure_below == predictor.confidence.top1_threshold
    assert report["unsure_rule"].endswith("(not confident)")
    rows = [json.loads(line) for line in rows]
    assert report["unsure_share"] == round(sum(not row["confident"] for row in rows) / len(rows), 4)


def test_unsure_threshold_can_be_set_at_refit(fitted):
    """Another definition of unsure (e.g. issue 11's confident threshold) switches dump and holdout alike."""
    import dataclasses

    predictor, texts, _ = fitted
    profile = dataclasses.replace(predictor.training_profile, unsure_below=1.01, unsure_source="not confident")
    stats = DumpStats.for_profile(profile)
    stats.add_answers(profile, predictor.predict(texts[:20]), texts[:20])
    report = drift_report(stats, profile)
    assert report["unsure_share"] == 1.0 and report["holdout"]["unsure_share"] == 1.0
    assert report["unsure_rule"] == "top-1 probability below 1.010 (not confident)"
    assert "unsure_share" not in report["outside"]
