"""Metric names: one prefix per evaluation, and what was logged under the earlier names is still read."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from papertrack import registry
from papertrack.training.champion import promotion

# the tags of a version registered before the metrics had their evaluation's prefix (one source: CV decides)
OLD_TAGS = {
    "data_digest": "d1",
    "candidate": "tfidf-word-cnb",
    "run_id": "r1",
    "label_top3": "0.700000",
    "label_macro_f1": "0.300000",
    "area_top1": "0.650000",
    "fit_seconds": "2.000000",
    "predict_ms_per_abstract": "0.900000",
    "insample_label_top3": "0.700000",
    "gate": "no champion yet",
}


def old_version(**tags):
    return SimpleNamespace(version="3", tags={**OLD_TAGS, **tags})


def test_a_version_with_the_old_names_is_read_under_the_current_ones():
    metrics = registry.version_metrics(old_version())
    assert metrics["cv_label_top3"] == 0.7 and metrics["cv_label_macro_f1"] == 0.3
    assert metrics["cv_area_top1"] == 0.65 and metrics["cv_fit_seconds"] == 2.0
    assert metrics["predict_ms_per_abstract"] == 0.9 and metrics["insample_label_top3"] == 0.7
    assert not {"label_top3", "label_macro_f1", "area_top1", "fit_seconds"} & set(metrics)


def test_the_gate_compares_a_new_winner_with_an_old_named_champion():
    better = {"cv_label_top3": 0.75, "cv_label_macro_f1": 0.2, "predict_ms_per_abstract": 1.0}
    promote, reason = promotion.gate(better, "d1", old_version())
    assert promote and reason.startswith("beats the champion: cv_label_top3 0.7500 vs champion v3 0.7000")
    worse = {"cv_label_top3": 0.69, "cv_label_macro_f1": 0.9, "predict_ms_per_abstract": 1.0}
    promote, reason = promotion.gate(worse, "d1", old_version())
    assert not promote and reason.startswith("does not beat the champion")


def test_a_current_name_wins_over_an_old_one_and_rank_key_reads_both():
    both = registry.current_names({"label_top3": 0.1, "cv_label_top3": 0.8, "label_macro_f1": 0.4})
    assert both == {"cv_label_top3": 0.8, "cv_label_macro_f1": 0.4}
    assert registry.rank_key({"label_top3": 0.8, "label_macro_f1": 0.3}) == (0.8, 0.3)


def test_stored_hits_under_the_old_metric_name_still_challenge(monkeypatch):
    stored = {"metric": "label_top3", "data_digest": "d1", "hits": [1, 0, 1, 1]}
    store = object()  # never opened: the hits are read through load_hits
    monkeypatch.setattr(promotion, "load_hits", lambda s, run_id: stored if (s, run_id) == (store, "r1") else None)
    champion = promotion.stored_contender(store, old_version(), "cv_label_top3", "d1")
    assert champion is not None
    assert champion.score == 0.7 and champion.tiebreak == 0.3 and champion.cost_ms == 0.9
    np.testing.assert_array_equal(champion.hits, [1.0, 0.0, 1.0, 1.0])
    assert promotion.stored_contender(store, old_version(), "cv_label_top3", "other data") is None


def test_evaluations_name_their_metrics_with_their_prefix():
    from papertrack.training.results import cv_metrics, insample_metrics

    scores = {"label_top1": 0.5, "label_top3": 0.9, "label_macro_f1": 0.4, "area_top1": 0.7, "ece": 0.1}
    assert cv_metrics(scores) == {
        "cv_label_top1": 0.5,
        "cv_label_top3": 0.9,
        "cv_label_macro_f1": 0.4,
        "cv_area_top1": 0.7,
        "cv_ece": 0.1,
    }
    assert insample_metrics(scores) == {
        "insample_label_top3": 0.9,
        "insample_label_top1": 0.5,
        "insample_label_macro_f1": 0.4,
        "insample_area_top1": 0.7,
    }


@pytest.mark.slow  # 6 s (--durations, loaded machine): a fresh MLflow SQLite store (schema migrations)
def test_runs_reads_candidate_runs_logged_with_the_old_names(tmp_path, monkeypatch):
    from papertrack import store
    from papertrack.training.leaderboard import leaderboard, runs_view

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    mine = store.open()
    client = mine.client()
    experiment_id = mine.experiment().experiment_id
    sweep = client.create_run(experiment_id, tags={"papertrack.kind": "sweep"}, run_name="sweep-old")
    for name, top3, f1 in (("old-a", 0.61, 0.2), ("old-b", 0.64, 0.1)):
        tags = {"papertrack.kind": "candidate", "candidate": name, "family": "tfidf"}
        run = client.create_run(experiment_id, tags={**tags, "mlflow.parentRunId": sweep.info.run_id}, run_name=name)
        for key, value in {"label_top3": top3, "label_macro_f1": f1, "fit_seconds": 1.5}.items():
            client.log_metric(run.info.run_id, key, value)
        client.set_terminated(run.info.run_id)
    client.set_terminated(sweep.info.run_id)
    board = leaderboard(mine)
    assert board["candidate"].tolist() == ["old-b", "old-a"]  # ranked by the CV top-3 under its old name
    assert board["cv_label_top3"].tolist() == [0.64, 0.61]
    assert board["cv_label_macro_f1"].tolist() == [0.1, 0.2] and board["cv_fit_seconds"].tolist() == [1.5, 1.5]
    assert runs_view(mine) == (experiment_id, None)  # no view stored by that version
