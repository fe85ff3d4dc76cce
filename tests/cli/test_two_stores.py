"""Two stores in one process: the store is a value passed along, never MLflow's process-wide setting."""

from __future__ import annotations

import os

import pytest

from tests.conftest import stratified_subset

ABSTRACT = "We prove a generalization bound for deep networks trained by stochastic gradient descent."


@pytest.mark.slow  # trains two one-candidate sweeps
def test_two_stores_each_serve_their_own_champion_and_leave_mlflow_global_alone(subset_path, tmp_path):
    import mlflow

    import papertrack
    from papertrack import registry, store
    from papertrack.training.sweep import SweepConfig, run_sweep

    before = mlflow.get_tracking_uri(), mlflow.get_registry_uri(), os.environ.get("MLFLOW_TRACKING_URI")
    smaller = stratified_subset(subset_path, tmp_path / "smaller.jsonl", 3)  # other data: another digest
    homes = {"a": tmp_path / "a" / ".papertrack", "b": tmp_path / "b" / ".papertrack"}
    data = {"a": subset_path, "b": smaller}
    trained = {}
    for name, home in homes.items():
        config = SweepConfig([data[name]], candidate_names=["tfidf-word-cnb"], folds=2, seed=1)
        trained[name] = run_sweep(config, store.open(home=home))
    assert trained["a"].data_digest != trained["b"].data_digest
    assert {r.decision.alias for r in trained.values()} == {"champion"}  # each the first version of its own store

    loaded = {name: papertrack.load(store=store.open(create=False, home=home)) for name, home in homes.items()}
    for name, model in loaded.items():
        assert model.store.home == homes[name]
        assert model.card.data_digest == trained[name].data_digest  # each carries its own store's champion
        assert model.card.run_id == trained[name].winner.run_id
    answers = {name: model.predict(ABSTRACT, top_k=5)[0] for name, model in loaded.items()}
    assert answers["a"]["tracks"] != answers["b"]["tracks"]  # trained on other papers: other probabilities

    # each store's registry holds its own version only; the runs of one are not in the other
    for name, other in (("a", "b"), ("b", "a")):
        mine = store.open(create=False, home=homes[name])
        assert registry.current_champion(mine).tags["data_digest"] == trained[name].data_digest
        assert mine.client().get_run(trained[name].winner.run_id).info.run_id == trained[name].winner.run_id
        with pytest.raises(mlflow.exceptions.MlflowException):
            mine.client().get_run(trained[other].winner.run_id)

    after = mlflow.get_tracking_uri(), mlflow.get_registry_uri(), os.environ.get("MLFLOW_TRACKING_URI")
    assert after == before


def test_using_points_mlflow_at_a_store_for_its_block_only(tmp_path):
    import mlflow

    from papertrack import store

    before = mlflow.get_tracking_uri(), mlflow.get_registry_uri(), os.environ.get("MLFLOW_TRACKING_URI")
    mine = store.Store(f"sqlite:///{tmp_path / 'x.db'}", f"sqlite:///{tmp_path / 'x.db'}", None, tmp_path)
    with pytest.raises(RuntimeError, match="inside"), store.using(mine):
        assert mlflow.get_tracking_uri() == mlflow.get_registry_uri() == mine.tracking_uri
        assert os.environ.get("MLFLOW_TRACKING_URI") == before[2]  # nothing exported for subprocesses
        raise RuntimeError("inside")
    assert (mlflow.get_tracking_uri(), mlflow.get_registry_uri(), os.environ.get("MLFLOW_TRACKING_URI")) == before
