"""End to end: train on a stratified subset of the shared corpus into a temporary MLflow store."""

import json
import os

import mlflow
import numpy as np
import pandas as pd
import pytest

from papertrack import registry, store
from papertrack.registry import PRIMARY_METRIC, TEMPORAL_PRIMARY_METRIC
from papertrack.training.dataset import load_dataset
from papertrack.training.leaderboard import leaderboard
from papertrack.training.sweep import SweepConfig, run_sweep
from tests.conftest import FAST_CANDIDATES, stratified_subset

pytestmark = pytest.mark.slow

METRICS = {
    "cv_label_top1",
    "cv_label_top3",
    "cv_label_macro_f1",
    "cv_area_top1",
    "cv_area_macro_f1",
    "cv_log_loss",
    "cv_ece",
    "cv_fit_seconds",
    "insample_label_top3",
    "insample_label_top1",
    "insample_label_macro_f1",
    "insample_area_top1",
    "predict_ms_per_abstract",
}
ARTIFACTS = {
    "report/per_class.csv",
    "plots/confusion_area.png",
    "plots/confusion_label.png",
    "plots/per_class_f1.png",
    "plots/reliability.png",
}


def _artifact_paths(client, run_id, path=None):
    paths = set()
    for item in client.list_artifacts(run_id, path):
        paths |= _artifact_paths(client, run_id, item.path) if item.is_dir else {item.path}
    return paths


def test_sweep_logs_nested_candidate_runs_with_metrics_and_artifacts(trained, tmp_path):
    result = trained["result"]
    client = trained["store"].client()
    parent = client.get_run(result.parent_run_id)
    assert parent.data.tags["papertrack.kind"] == "sweep"
    assert parent.data.params["data_digest"] == result.data_digest
    assert [i.dataset.digest for i in parent.inputs.dataset_inputs] == [result.data_digest]
    children = client.search_runs([parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{result.parent_run_id}'")
    assert sorted(r.data.tags["candidate"] for r in children) == sorted(FAST_CANDIDATES)
    for run in children:
        assert run.info.status == "FINISHED"  # written by the sweep's background thread, then ended
        assert METRICS <= set(run.data.metrics)
        assert run.data.params["hp.alpha" if "cnb" in run.data.tags["candidate"] else "hp.C"]
        assert run.data.params["seed"] == "7" and run.data.params["folds"] == "3"
        assert ARTIFACTS <= _artifact_paths(client, run.info.run_id)
        assert run.info.artifact_uri.startswith((trained["home"] / "artifacts").as_uri())
        report = pd.read_csv(client.download_artifacts(run.info.run_id, "report/per_class.csv", str(tmp_path)))
        assert report["support"].sum() == len(load_dataset([trained["data"]])[0])  # one duplicate is skipped
    board = leaderboard(trained["store"], sweep=result.parent_run_id)  # this sweep's, whatever later tests add
    assert list(board["candidate"]) == [r.candidate.name for r in result.leaderboard()]


def test_by_default_only_the_winner_and_the_runner_up_get_plots(subset_path, tmp_path, monkeypatch):
    """`top2` (train's default; the suite's is none): the four plots in the winner's and the runner-up's runs, drawn
    once the champion is chosen; the other candidates' runs get their per-class report only."""
    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PAPERTRACK_PLOTS")
    mine = store.open()
    three = ["tfidf-word-cnb", "tfidf-word-logreg", "tfidf-word-svm"]
    result = run_sweep(SweepConfig([subset_path], candidate_names=three, folds=2, seed=1, register=False), mine)
    client = mine.client()
    ranked = [result.winner] + [r for r in result.leaderboard() if r is not result.winner]
    artifacts = {r.candidate.name: _artifact_paths(client, r.run_id) for r in ranked}
    assert ARTIFACTS <= artifacts[ranked[0].candidate.name] and ARTIFACTS <= artifacts[ranked[1].candidate.name]
    assert artifacts[ranked[2].candidate.name] == {"report/per_class.csv"}
    assert all(client.get_run(r.run_id).info.status == "FINISHED" for r in ranked)


def test_plots_none_draws_no_plot_at_all_not_even_the_winners_risk_coverage(subset_path, tmp_path, monkeypatch):
    """`none` (the suite's setting): no run gets a plot, the winner's calibration plot neither (it was drawn anyway,
    ~1.4 s a sweep); the calibration itself is logged."""
    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PAPERTRACK_PLOTS", "none")
    mine = store.open()
    config = SweepConfig([subset_path], candidate_names=["tfidf-word-cnb"], folds=2, seed=1, register=False)
    result = run_sweep(config, mine)
    client = mine.client()
    assert client.list_artifacts(result.winner.run_id, "plots") == []
    assert [a.path for a in client.list_artifacts(result.winner.run_id, "confidence")] == [
        "confidence/calibration.json"
    ]


def test_a_candidate_run_that_cannot_be_written_fails_the_sweep_and_no_run_is_left_running(
    subset_path, tmp_path, monkeypatch
):
    """The candidates' runs are written on a background thread: its failure is the sweep's (nothing registered,
    the failed run and the sweep's run FAILED), never lost; runs it had not started are ended FAILED too."""
    from papertrack.training import tracking

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    mine = store.open()
    written = []

    def plots_fail_once(run, proba, y, space, name, plots=True):
        written.append(name)
        if len(written) == 1:
            raise OSError("disk full (test)")

    monkeypatch.setattr(tracking, "log_evaluation_artifacts", plots_fail_once)
    config = SweepConfig([subset_path], candidate_names=["tfidf-word-cnb", "tfidf-word-logreg"], folds=2, seed=1)
    with pytest.raises(OSError, match="disk full"):
        run_sweep(config, mine)
    client = mine.client()
    runs = client.search_runs([client.get_experiment_by_name("papertrack").experiment_id])
    statuses = {r.data.tags.get("candidate", r.data.tags.get("papertrack.kind")): r.info.status for r in runs}
    assert statuses.pop("sweep") == "FAILED"
    assert statuses[written[0]] == "FAILED" and "RUNNING" not in statuses.values()
    assert registry.current_champion(mine) is None


def test_champion_is_registered_and_predicts_from_abstract_only(trained):
    result = trained["result"]
    champion = registry.current_champion(trained["store"])
    assert champion is not None and result.decision.alias == "champion"
    assert champion.version == result.decision.version
    assert champion.tags["data_digest"] == result.data_digest
    assert champion.run_id == result.winner.run_id
    # the version's metric tags (what serving reports in /metadata) are exactly the winner's CV metrics
    recorded = registry.version_metrics(champion)
    assert set(recorded) == set(result.winner.metrics)
    assert recorded[PRIMARY_METRIC] == pytest.approx(result.winner.metrics[PRIMARY_METRIC], abs=1e-6)
    with store.using(trained["store"]):
        model = mlflow.pyfunc.load_model(trained["model_uri"])
        requirements = open(
            os.path.join(mlflow.artifacts.download_artifacts(trained["model_uri"]), "requirements.txt")
        ).read()
    assert model.metadata.signature is not None
    assert "scikit-learn==" in requirements and "papertrack==" in requirements
    abstracts = pd.read_json(trained["data"], lines=True).head(5)
    out = model.predict(abstracts[["abstract"]], params={"top_k": 4})
    assert len(out) == 5
    for tracks, areas in zip(out["tracks"], out["areas"]):
        assert len(tracks) == 4
        probs = [t["probability"] for t in tracks]
        assert probs == sorted(probs, reverse=True)
        assert sum(a["probability"] for a in areas) == pytest.approx(1.0)
        best_area = areas[0]["area"]
        assert tracks[0]["area"] in {a["area"] for a in areas}
        assert areas[0]["probability"] >= max(a["probability"] for a in areas if a["area"] != best_area)
    # output="json" (for Spark): the same answers, one JSON object string per record
    as_json = model.predict(abstracts[["abstract"]], params={"top_k": 4, "output": "json"})
    assert list(as_json.columns) == ["answer"]
    for answer, (_, row) in zip(as_json["answer"], out.iterrows()):
        assert json.loads(answer) == {key: value for key, value in row.to_dict().items()}
    with pytest.raises(Exception, match="output must be"):
        model.predict(abstracts[["abstract"]], params={"output": "xml"})


def test_the_results_say_how_many_folds_the_cross_validation_had(trained):
    """The session's sweep ran with --folds 3: the table's note says 3-fold (it said 5-fold whatever --folds was)."""
    import io

    from rich.console import Console

    from papertrack.training.report import print_results

    out = io.StringIO()
    print_results(Console(file=out, width=300), trained["result"])
    assert "CV: 3-fold cross-validation on all sources" in out.getvalue()


def test_champion_beats_majority_baseline_by_a_clear_margin(trained):
    result = trained["result"]
    assert result.winner.metrics[TEMPORAL_PRIMARY_METRIC] >= result.baseline[TEMPORAL_PRIMARY_METRIC] + 0.2
    assert result.winner.metrics["cv_area_top1"] >= result.baseline["cv_area_top1"] + 0.1


def test_promotion_gate_refuses_worse_model_and_promotes_on_new_data(subset_path, tmp_path, monkeypatch):
    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    mine = store.open()
    first = run_sweep(SweepConfig([subset_path], candidate_names=["tfidf-word-cnb"], folds=2, seed=1), mine)
    assert first.decision.alias == "champion"

    worse = run_sweep(SweepConfig([subset_path], candidate_names=["majority-baseline"], folds=2, seed=1), mine)
    assert worse.decision.alias == "challenger"
    assert "does not beat the champion" in worse.decision.reason
    assert registry.current_champion(mine).version == first.decision.version

    # other data: the champion's recipe (the same candidate here) is re-scored on the new holdout, not waved through
    smaller = stratified_subset(subset_path, tmp_path / "smaller.jsonl", 6)
    changed = run_sweep(SweepConfig([smaller], candidate_names=["tfidf-word-cnb"], folds=2, seed=1), mine)
    assert changed.data_digest != first.data_digest
    reason = changed.decision.reason
    assert changed.decision.alias == "champion", reason
    assert "training data changed" in reason and "at least as good as the champion re-scored" in reason
    version = registry.current_champion(mine)
    assert version.version == changed.decision.version
    assert first.data_digest in version.tags["data_change"]


def test_the_winners_holdout_hits_are_stored_and_read_back_for_the_next_promotion(trained, tmp_path, monkeypatch):
    from papertrack.training.champion.promotion import HITS_ARTIFACT, stored_contender

    mine = trained["store"]
    result = trained["result"]
    champion = registry.current_champion(mine)
    metric = result.choice.metric
    path = mine.client().download_artifacts(champion.tags["run_id"], HITS_ARTIFACT, str(tmp_path))
    stored = json.loads(open(path, encoding="utf-8").read())
    assert stored["metric"] == metric and stored["data_digest"] == result.data_digest
    np.testing.assert_array_equal(stored["hits"], result.winner.selection_hits(3))
    again = stored_contender(mine, champion, metric, result.data_digest)
    assert again.score == pytest.approx(result.winner.metrics[metric], abs=1e-6)
    assert again.cost_ms == pytest.approx(result.winner.metrics["predict_ms_per_abstract"], abs=1e-6)
    assert again.tiebreak == pytest.approx(result.winner.metrics[registry.TIEBREAK_OF[metric]], abs=1e-6)
    assert stored_contender(mine, champion, metric, "another-digest") is None
    assert stored_contender(mine, champion, "cv_label_top1", result.data_digest) is None


def test_register_lets_a_challenge_decide_before_the_gate(subset_path, tmp_path, monkeypatch):
    from papertrack.training.champion.promotion import promotion_rule

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    mine = store.open()
    first = run_sweep(SweepConfig([subset_path], candidate_names=["tfidf-word-cnb"], folds=2, seed=1), mine)
    seen = []

    def refuse(champion):
        seen.append(champion.version)
        return False, "refused by the challenge"

    # asked with the champion read at decision time, before the gate
    decision = registry.register(
        mine,
        first.model_uri,
        first.winner.run_id,
        {**first.winner.metrics},
        first.data_digest,
        "tfidf-word-cnb",
        promotion_rule({**first.winner.metrics}, first.data_digest, challenge=refuse),
    )
    assert seen == [first.decision.version]
    assert decision.alias == "challenger" and decision.reason.startswith("refused by the challenge")
    assert registry.current_champion(mine).version == first.decision.version
    # a challenge with no opinion (None) leaves the decision to the gate
    decision = registry.register(
        mine,
        first.model_uri,
        first.winner.run_id,
        {**first.winner.metrics},
        first.data_digest,
        "tfidf-word-cnb",
        promotion_rule({**first.winner.metrics}, first.data_digest, challenge=lambda champion: None),
    )
    assert decision.alias == "challenger" and "does not beat the champion" in decision.reason


def test_the_champion_rule_decision_is_stored_on_the_version_and_the_sweep_run(trained, tmp_path):
    result = trained["result"]
    client = trained["store"].client()
    champion = registry.current_champion(trained["store"])
    assert result.winner.candidate.name == result.choice.winner
    assert champion.tags["champion_rule"] == result.choice.reason
    assert champion.tags["champion_rule.metric"] == "temporal_label_top3"  # two years: the temporal holdout decides
    assert {"temporal_label_top3", "cv_label_top3"} <= set(registry.version_metrics(champion))
    parent = client.get_run(result.parent_run_id)
    assert parent.data.tags["champion_rule"] == result.choice.reason
    description = parent.data.tags["mlflow.note.content"]
    assert result.choice.reason in description and "| shift top3 |" in description
    assert all(r.candidate.name in description for r in result.results)
    (dataset_input,) = parent.inputs.dataset_inputs
    assert dataset_input.dataset.name == "ICLR 2024 + ICML 2024 + ICLR 2025"
    experiment = client.get_experiment(parent.info.experiment_id)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    distribution = pd.read_csv(
        client.download_artifacts(result.parent_run_id, "data/label_distribution_by_source.csv", str(tmp_path))
    )
    sources = ["ICLR 2024", "ICML 2024", "ICLR 2025"]
    assert list(distribution.columns) == ["label", "area", *sources, "total"]
    assert distribution[sources].sum().sum() == distribution["total"].sum() == len(load_dataset([trained["data"]])[0])


def test_logging_the_dataset_retries_when_a_concurrent_train_inserted_it_first(monkeypatch):
    """Two trains against one server insert the same dataset row at once; the loser asks again (and then only
    links its run to the existing row). Any other store error is raised at once."""
    from types import SimpleNamespace

    from mlflow.exceptions import MlflowException

    from papertrack.training import tracking

    calls = []
    dataset = SimpleNamespace(to_dict=lambda: {"name": "d", "digest": "x1", "source_type": "local", "source": "{}"})

    def flaky(run_id, datasets):
        calls.append((run_id, [(d.dataset.digest, d.tags[0].value) for d in datasets]))
        if len(calls) == 1:
            raise MlflowException(
                "BAD_REQUEST: (psycopg.errors.UniqueViolation) duplicate key value violates "
                'unique constraint "dataset_pk"'
            )

    monkeypatch.setattr(tracking.time, "sleep", lambda seconds: None)
    tracking.log_dataset_input(SimpleNamespace(log_inputs=flaky), "r1", dataset)
    assert calls == [("r1", [("x1", "training")])] * 2

    def broken(run_id, datasets):
        calls.append(run_id)
        raise MlflowException("RESOURCE_DOES_NOT_EXIST: run not found")

    calls.clear()
    with pytest.raises(MlflowException, match="run not found"):
        tracking.log_dataset_input(SimpleNamespace(log_inputs=broken), "r1", dataset)
    assert calls == ["r1"]
