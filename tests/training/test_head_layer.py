"""Heads that share the work (training.head_layer, models.layered_head): a crosswalked taxonomy evaluated and refit
on the main taxonomy's members and a name layer of its own — the layer's table, that no fold's layer or features saw
that fold's test labels, that the temporal holdout never reads the venue's labels, and that the refit head is the
main predictor's own fitted members. Synthetic records, seconds."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from papertrack.features.crosswalk import read_crosswalk
from papertrack.models.catalogue import CANDIDATES, ensemble_candidate
from papertrack.models.ensemble import with_weights
from papertrack.models.layered_head import LayeredHead, NameLayer
from papertrack.models.native_mixture import NativeMixture
from papertrack.training import pipeline, taxonomies
from papertrack.training import refit as refitting
from papertrack.training.config import SweepConfig
from papertrack.training.cv import known_names_split
from papertrack.training.data import TrainingSet, temporal_direction
from papertrack.training.head_layer import evaluate_layered
from papertrack.training.planning import plan_holdouts
from papertrack.training.renames import RenameMap
from tests.synthetic_corpus import venue_records
from tests.training.test_native_mixture import CROSSWALK, NEW, OLD

MEMBERS = ["tfidf-word-cnb", "tfidf-word12-cnb"]
ENSEMBLE = ensemble_candidate("ensemble-cnbs", MEMBERS)


def test_the_layer_counts_each_main_answer_into_the_labels_of_its_rows():
    proba = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # main names a, b
    layer = NameLayer(3, smoothing=0.3).fit(proba, np.array([2, 2, 0]))
    # a: two rows labelled 2 (+0.1 each); b: one row labelled 0
    np.testing.assert_allclose(layer.table_, [[0.1 / 2.3, 0.1 / 2.3, 2.1 / 2.3], [1.1 / 1.3, 0.1 / 1.3, 0.1 / 1.3]])
    np.testing.assert_allclose(layer.transform(np.array([[0.5, 0.5]])).sum(axis=1), 1.0)
    # a row with a main label counts in its cell whatever it answered; one without spreads by its answer
    counted = NameLayer(3, smoothing=0.0).fit(proba, np.array([2, 2, 0]), main_y=np.array([1, -1, 0]))
    np.testing.assert_allclose(counted.table_, [[0.5, 0.0, 0.5], [0.0, 0.0, 1.0]])  # a: rows 1, 2; b: row 0
    with pytest.raises(ValueError, match="3 rows"):
        NameLayer(3).fit(proba, np.array([0, 1]))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A main taxonomy of two years (OLD 2024, OLDB 2025: a temporal holdout) and NEW 2025 through a crosswalk,
    evaluated as the sweep does with an ensemble of two members."""
    path = tmp_path_factory.mktemp("cw") / "old-to-new.yaml"
    path.write_text(CROSSWALK, encoding="utf-8")
    records = [
        *venue_records(OLD, "OLD", 2024, 40, 0),
        *venue_records(OLD, "OLDB", 2025, 40, 2),
        *venue_records(NEW, "NEW", 2025, 12, 1),
    ]
    heads = taxonomies.build(records, RenameMap.with_extra(()), [read_crosswalk(path)])
    config = SweepConfig(candidate_names=[*MEMBERS], folds=3, seed=0, register=False)
    candidates = [*(CANDIDATES[m] for m in MEMBERS), ENSEMBLE]
    main, head = heads.heads
    holdouts = plan_holdouts(main.data, 3)
    assert holdouts.temporal is not None
    results = pipeline.evaluate_all(candidates, main.data, holdouts, config, None, [head])
    return heads, {r.candidate.name: r for r in results}


def test_the_head_is_evaluated_on_the_main_members_with_layers(swept):
    heads, results = swept
    head = heads.heads[1]
    for name in [*MEMBERS, ENSEMBLE.name]:
        result = results[name].heads[head.name]
        assert set(result.layers) == ({name} if name in MEMBERS else set(MEMBERS))
        assert "temporal_label_top3" in result.metrics and 0 < result.native_share < 1
        assert results[name].metrics[f"known_label_top3.{head.slug}"] == result.metrics["cv_label_top3"]
    assert results[ENSEMBLE.name].heads[head.name].metrics["cv_label_top3"] > 0.8


def test_a_heads_temporal_ensemble_takes_the_main_temporal_weights_and_fits_no_inner_folds(swept):
    heads, results = swept
    head = heads.heads[1]
    main_weights = results[ENSEMBLE.name].temporal.weights
    (chosen,) = main_weights.values()
    assert len(chosen) == len(MEMBERS)
    assert list(results[ENSEMBLE.name].heads[head.name].temporal.weights.values()) == [chosen]
    for name in MEMBERS:  # the main taxonomy chose its weights on inner folds; the head fitted none
        assert results[name].temporal.inner_oof
        assert results[name].heads[head.name].temporal.inner_oof == {}


def _relabelled(data: TrainingSet, rows: np.ndarray, rng) -> TrainingSet:
    y = data.y.copy()
    y[rows] = rng.integers(0, data.space.n_labels, len(rows))
    return TrainingSet(
        data.records, data.space, y, data.texts, data.digest, data.sources, data.years, data.labels, data.taxonomy,
        data.native,
    )  # fmt: skip


def test_no_fold_reads_its_test_papers_labels_and_the_temporal_holdout_none_of_the_venues(swept, monkeypatch):
    heads, results = swept
    head = heads.heads[1]
    data = head.data
    split = known_names_split(data.y, data.space, data.native_rows, 3, 0)
    temporal, _ = temporal_direction(data)
    shared = _shared(results, heads)
    (before,) = evaluate_layered([CANDIDATES["tfidf-word-cnb"]], shared, data, split, temporal, 0)
    rng = np.random.default_rng(5)
    _, test = split[1]
    (after,) = evaluate_layered(
        [CANDIDATES["tfidf-word-cnb"]], shared, _relabelled(data, test, rng), split, temporal, 0
    )
    np.testing.assert_array_equal(after.cv.oof_proba[test], before.cv.oof_proba[test])
    _, other_test = split[0]
    assert not np.array_equal(after.cv.oof_proba[other_test], before.cv.oof_proba[other_test])
    own = _relabelled(data, data.native_rows, rng)  # every label of the venue's own papers changed
    (later,) = evaluate_layered([CANDIDATES["tfidf-word-cnb"]], shared, own, split, temporal, 0)
    np.testing.assert_array_equal(later.temporal.proba, before.temporal.proba)


def _shared(results, heads):
    from papertrack.training.head_layer import SharedMembers

    main = heads.heads[0].data
    _, extra_rows = SharedMembers.extra_texts(main, [heads.heads[1].data])
    return SharedMembers(main, extra_rows, results)


def test_the_refit_head_is_the_main_members_through_its_layers(swept):
    heads, results = swept
    main, head = heads.heads
    winner = results[ENSEMBLE.name]
    refit = refitting.refit(winner, main.data, 0, False, [head])
    predictor = refit.predictor.heads[head.name]
    mixture = predictor.classifier
    assert isinstance(mixture, NativeMixture) and isinstance(mixture.base, LayeredHead)
    assert mixture.base.base is refit.predictor.classifier  # the main predictor's fitted members, not a copy
    texts = ["a safety jailbreak harmful refusal study", "attention transformer heads softmax tokens"]
    layers = winner.heads[head.name].layers
    main_members = refit.predictor.classifier.members_
    answers = mixture.base.answers(texts)
    for (name, _, _), proba in zip(main_members, refit.predictor.classifier.member_proba(texts)):
        np.testing.assert_allclose(answers[name], proba)  # a member the main ensemble has is its answer
    weights = {m: w for m, w in winner.heads[head.name].member_weights.items() if w > 0}
    expected = sum(w * layers[m].transform(answers[m]) for m, w in weights.items()) / sum(weights.values())
    np.testing.assert_allclose(mixture.base.predict_proba(texts), expected)
    labels = np.asarray(head.data.space.labels)[predictor.predict_proba(texts).argmax(axis=1)]
    assert labels.tolist() == ["Social Aspects · Safety", "Deep Learning · Attention Mechanisms"]
    loaded = pickle.loads(pickle.dumps(refit.predictor))
    assert loaded.heads[head.name].classifier.base.base is loaded.classifier  # stored once


def test_a_member_the_main_ensemble_left_out_is_fitted_for_the_head_that_weighs_it(swept):
    """The main taxonomy's ensemble gives a member weight 0 (its refit fits only the other), the head's weighs both:
    the refit fits the left-out member on the main taxonomy's rows for the head (it once failed: KeyError)."""
    heads, results = swept
    main, head = heads.heads
    chosen = results[ENSEMBLE.name]
    winner = dataclasses.replace(chosen, candidate=with_weights(ENSEMBLE, [1.0, 0.0]))
    winner.heads = {head.name: dataclasses.replace(chosen.heads[head.name], member_weights=dict.fromkeys(MEMBERS, 0.5))}
    refit = refitting.refit(winner, main.data, 0, False, [head])
    assert [name for name, _, _ in refit.predictor.classifier.members_] == MEMBERS[:1]
    layered = refit.predictor.heads[head.name].classifier.base
    ((name, model),) = layered.extra
    assert name == MEMBERS[1] and len(model.classes_) == main.data.space.n_labels
    texts = ["a safety jailbreak harmful refusal study", "attention transformer heads softmax tokens"]
    alone = CANDIDATES[MEMBERS[1]].build(main.data.space.n_labels, 0).fit(main.data.texts, main.data.y)
    np.testing.assert_allclose(layered.answers(texts)[MEMBERS[1]], alone.predict_proba(texts))


def test_the_heads_temporal_holdout_is_fitted_as_before_sharing(swept):
    """Only the known k-fold is shared: the temporal figures (what the champion is chosen on) are those of the head
    fitted on its own earlier years, as the sweep fitted every head before."""
    from papertrack.training.evaluation import evaluate_candidates

    heads, results = swept
    head = heads.heads[1]
    data = head.data
    temporal, _ = temporal_direction(data)
    split = known_names_split(data.y, data.space, data.native_rows, 3, 0)
    candidates = [*(CANDIDATES[m] for m in MEMBERS), ENSEMBLE]
    alone = {r.candidate.name: r for r in evaluate_candidates(candidates, data, split, 0, None, (), temporal, 1)}
    for name in [*MEMBERS, ENSEMBLE.name]:
        np.testing.assert_array_equal(results[name].heads[head.name].temporal.proba, alone[name].temporal.proba)
