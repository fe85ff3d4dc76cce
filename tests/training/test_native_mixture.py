"""A crosswalked taxonomy's model mixed with a model of its own papers (training.native_mixture,
models.native_mixture): what the native model is fitted on, that the mixture is what the figures and the refit
use, and that the temporal holdout (no own paper on its training side) is untouched. Synthetic records, seconds."""

from __future__ import annotations

import numpy as np
import pytest

from papertrack.features.crosswalk import read_crosswalk
from papertrack.models.catalogue import CANDIDATES
from papertrack.models.native_mixture import NativeMixture, mix
from papertrack.training import head_evaluation, native_mixture, pipeline, taxonomies
from papertrack.training import refit as refitting
from papertrack.training.config import SweepConfig
from papertrack.training.cv import known_names_split
from papertrack.training.data import temporal_direction
from papertrack.training.evaluation import Listener, evaluate_candidates
from papertrack.training.planning import Holdouts
from papertrack.training.renames import RenameMap
from papertrack.training.scoring import evaluate
from tests.synthetic_corpus import venue_records

# The older papers teach NEW 2025's "Safety" from an old track that held its "Security" papers too (the crosswalk
# gives Security too small a share to be taught): a model of the many older papers calls NEW 2025's security papers
# "Safety"; NEW 2025's own papers know better.
OLD = {
    "Theory · Learning Theory": "theorem bound proof generalization sample complexity",
    "Social Aspects · Trustworthy Machine Learning": "safety jailbreak harmful refusal attack adversarial backdoor",
    "Deep Learning · Attention Mechanisms": "attention transformer heads softmax tokens",
}
NEW = {
    "Theory · Learning Theory": OLD["Theory · Learning Theory"],
    "Social Aspects · Safety": "safety jailbreak harmful refusal",
    "Social Aspects · Security": "attack adversarial backdoor",
    "Deep Learning · Attention Mechanisms": OLD["Deep Learning · Attention Mechanisms"],
}
CROSSWALK = """\
from: OLD 2024
to: NEW 2025
map:
  Social Aspects · Trustworthy Machine Learning:
    Social Aspects · Safety: 0.85
    Social Aspects · Security: 0.15
"""


@pytest.fixture(scope="module")
def heads(tmp_path_factory):
    path = tmp_path_factory.mktemp("cw") / "old-to-new.yaml"
    path.write_text(CROSSWALK, encoding="utf-8")
    records = [*venue_records(OLD, "OLD", 2024, 80, 0), *venue_records(NEW, "NEW", 2025, 9, 1)]
    return taxonomies.build(records, RenameMap.with_extra(()), [read_crosswalk(path)])


def test_mix_is_the_weighted_mean_and_refuses_a_share_outside_0_1():
    base = np.array([[0.7, 0.2, 0.1]])
    native = np.array([[0.1, 0.1, 0.8]])
    np.testing.assert_allclose(mix(base, native, 0.25), [[0.55, 0.175, 0.275]])
    with pytest.raises(ValueError, match="within"):
        mix(base, native, 1.5)
    with pytest.raises(ValueError, match="shape"):
        mix(base, native[:, :2], 0.5)


def test_the_native_model_is_fitted_on_each_folds_own_training_papers_only(heads, monkeypatch):
    data = heads.heads[1].data
    fitted: list[set[str]] = []
    real = native_mixture.build_native

    class Recording:
        def __init__(self, model):
            self.model = model

        def fit(self, texts, y):
            fitted.append(set(texts))
            self.model.fit(texts, y)
            return self

        def predict_proba(self, texts):
            return self.model.predict_proba(texts)

    monkeypatch.setattr(native_mixture, "build_native", lambda n, seed: Recording(real(n, seed)))
    split = known_names_split(data.y, data.space, data.native_rows, 3, 0)
    oof = native_mixture.native_oof(data, split, 0)
    assert oof is not None and len(fitted) == 3
    own = {data.texts[i] for i in data.native_rows}
    for texts, (train, test) in zip(fitted, split):
        assert texts <= own  # no older paper
        assert texts == {data.texts[i] for i in train} & own  # every own paper of the training side
        assert not texts & {data.texts[i] for i in test}  # no test paper
    np.testing.assert_allclose(oof[np.concatenate([t for _, t in split])].sum(axis=1), 1.0)


def test_the_known_figures_are_of_the_mixture_and_the_temporal_ones_are_the_candidates_own(heads):
    head = heads.heads[1]
    data = head.data
    candidates = [CANDIDATES["tfidf-word-cnb"]]
    config = SweepConfig(candidate_names=["tfidf-word-cnb"], folds=3, seed=0, register=False)
    mixed = head_evaluation.evaluate_head(candidates, head, config, Listener())["tfidf-word-cnb"]
    split = known_names_split(data.y, data.space, data.native_rows, 3, 0)
    temporal, _ = temporal_direction(data)
    (plain,) = evaluate_candidates(candidates, data, split, 0, None, (), temporal, 1)
    own = data.native_rows
    # the older papers call security papers "Safety": the candidate alone follows them, the mixture does not
    security = np.asarray(data.space.labels)[data.y[own]] == "Social Aspects · Security"
    plain_top1 = plain.cv.oof_proba[own].argmax(axis=1) == data.y[own]
    mixed_top1 = mixed.cv.oof_proba[own].argmax(axis=1) == data.y[own]
    assert mixed_top1[security].mean() > plain_top1[security].mean() + 0.3
    assert 0 < mixed.native_share < 1 and mixed.metrics["native_share"] == mixed.native_share
    assert mixed.metrics["cv_label_top1"] == pytest.approx(
        evaluate(mixed.cv.oof_proba[own], data.y[own], data.space)["label_top1"]
    )
    assert mixed.metrics["cv_label_top1"] > plain.metrics["cv_label_top1"]
    # the temporal holdout trains on 2024 only: no own paper, no native model, the same figures
    for key in ("temporal_label_top3", "temporal_label_top1", "temporal_area_top1"):
        assert mixed.metrics[key] == plain.metrics[key]
    np.testing.assert_array_equal(mixed.temporal.proba, plain.temporal.proba)


def test_the_refit_head_answers_with_the_mixture_and_the_default_taxonomy_without(heads):
    main, head = heads.heads
    config = SweepConfig(candidate_names=["tfidf-word-cnb"], folds=3, seed=0, register=False)
    holdouts = Holdouts(None, [], "out-of-fold")
    (winner,) = pipeline.evaluate_all([CANDIDATES["tfidf-word-cnb"]], main.data, holdouts, config, None, [head])
    refit = refitting.refit(winner, main.data, 0, False, [head])
    assert not isinstance(refit.predictor.classifier, NativeMixture)
    predictor = refit.predictor.heads[head.name]
    classifier = predictor.classifier
    assert isinstance(classifier, NativeMixture)
    assert classifier.alpha == winner.heads[head.name].native_share
    texts = ["a safety jailbreak harmful refusal study", "backdoor poisoning attack adversarial"]
    expected = mix(classifier.base.predict_proba(texts), classifier.native.predict_proba(texts), classifier.alpha)
    np.testing.assert_allclose(predictor.predict_proba(texts), expected)
    labels = np.asarray(head.data.space.labels)[predictor.predict_proba(texts).argmax(axis=1)]
    assert labels.tolist() == ["Social Aspects · Safety", "Social Aspects · Security"]
    assert sum(w for _, _, w in classifier.members_) == pytest.approx(1.0)


def test_the_majority_baseline_is_not_mixed(heads):
    head = heads.heads[1]
    config = SweepConfig(candidate_names=["majority-baseline"], folds=3, seed=0, register=False)
    (result,) = head_evaluation.evaluate_head([CANDIDATES["majority-baseline"]], head, config, Listener()).values()
    own = head.data.native_rows
    assert result.native_share == 0 and "native_share" not in result.metrics
    # every own paper gets its training side's label frequencies: the same row for every paper of a fold
    assert all(
        len(np.unique(result.cv.oof_proba[test], axis=0)) == 1
        for _, test in known_names_split(head.data.y, head.data.space, own, 3, 0)
    )
