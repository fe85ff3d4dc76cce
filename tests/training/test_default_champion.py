"""The default champion (what `papertrack train` picks on the default data, within the default budget) is
served with the same answers as its MLflow pyfunc (issue 17)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.conftest import bentoml_home

pytestmark = pytest.mark.slow  # trains and imports a model

DEFAULT_CHAMPION = "ensemble-tfidf"  # the default sweep's champion on the three sources (README "Figures")
ABSTRACTS = [
    "We introduce a sparse attention mechanism for transformers that attends to a learned subset of tokens.",
    "We study offline reinforcement learning and derive a conservative policy gradient method.",
    "A genome-scale model of cell biology learns protein function from sequence and health records.",
]


def test_the_default_champion_is_within_the_default_budget_and_in_the_default_sweep():
    from papertrack.models.catalogue import CANDIDATES, default_sweep
    from papertrack.training.sweep import DEFAULT_BUDGET_MS

    assert DEFAULT_CHAMPION in {c.name for c in default_sweep()}
    assert CANDIDATES[DEFAULT_CHAMPION].expected_ms <= DEFAULT_BUDGET_MS


def test_served_answer_equals_the_pyfunc_for_the_default_champion(labeled_subset, tmp_path, monkeypatch):
    import mlflow

    from papertrack import store as mlstore
    from papertrack.serving.http import bento_store as store
    from papertrack.training.sweep import SweepConfig, run_sweep

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    mine = mlstore.open()
    try:
        result = run_sweep(SweepConfig([labeled_subset], candidate_names=[DEFAULT_CHAMPION], folds=3, seed=3), mine)
        assert result.decision.alias == "champion"  # a fresh store: the first version is champion
        with mlstore.using(mine):
            model = mlflow.pyfunc.load_model("models:/papertrack@champion")
        with bentoml_home(tmp_path / "bentoml"):
            imported = store.import_champion(mine)
            monkeypatch.setenv("PAPERTRACK_BENTO_MODEL", str(imported.tag))
            from papertrack.serving.http.service import PaperTrack

            service = PaperTrack.inner()  # the service class itself, as BentoML's worker builds it
            assert service.predictor.card.candidate == result.winner.candidate.name
            for abstract in ABSTRACTS:
                body = json.dumps({"abstract": abstract, "top_k": 5}).encode()
                served = json.loads(service._respond(PaperTrack.inner.predict, body).body)
                expected = model.predict(pd.DataFrame({"abstract": [abstract]}), params={"top_k": 5}).iloc[0]
                assert served["tracks"] == list(expected["tracks"]) and served["areas"] == list(expected["areas"])
                assert served["prediction_set"] == list(expected["prediction_set"])
                assert served["confident"] == expected["confident"]
    finally:
        monkeypatch.undo()
