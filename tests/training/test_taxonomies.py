"""Taxonomies as data: heads built from sources and crosswalks, answers in the asked taxonomy, the promotion
sanity checks. Synthetic records (seconds, no MLflow store)."""

from __future__ import annotations

import numpy as np
import pytest

from papertrack.errors import UsageError
from papertrack.features.crosswalk import read_crosswalk
from papertrack.models.confidence import Confidence
from papertrack.models.request import TopKError
from papertrack.training import taxonomies
from papertrack.training.champion import promotion
from papertrack.training.data import temporal_direction
from papertrack.training.renames import RenameMap
from tests.synthetic_corpus import TOPICS, venue_records

OLD = {  # 2024 names -> topic words
    "Theory · Learning Theory": TOPICS["Theory · Learning Theory"],
    "Miscellaneous Aspects of Machine Learning · Causality": "causal intervention confounder counterfactual effect",
    "Social Aspects · Trustworthy Machine Learning": "robust attack adversarial safety secure jailbreak",
    "Deep Learning · Attention Mechanisms": TOPICS["Deep Learning · Attention Mechanisms"],
}
NEW = {  # 2025 names -> topic words
    "Theory · Learning Theory": TOPICS["Theory · Learning Theory"],
    "General Machine Learning · Causality": OLD["Miscellaneous Aspects of Machine Learning · Causality"],
    "Social Aspects · Safety": "safety jailbreak harmful refusal",
    "Social Aspects · Security": "attack adversarial secure backdoor",
    "Deep Learning · Attention Mechanisms": TOPICS["Deep Learning · Attention Mechanisms"],
    "Position · Methodology": "position argue community should rethink call",
}
CROSSWALK = """\
from: OLD 2024
to: NEW 2025
map:
  Miscellaneous Aspects of Machine Learning: General Machine Learning
  Social Aspects · Trustworthy Machine Learning:
    Social Aspects · Safety: 0.5
    Social Aspects · Security: 0.5
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = tmp_path_factory.mktemp("cw") / "old-to-new.yaml"
    path.write_text(CROSSWALK, encoding="utf-8")
    records = [
        *venue_records(OLD, "OLD", 2024, 12, 0),
        *venue_records(OLD, "OTHER", 2024, 12, 1),
        *venue_records(NEW, "NEW", 2025, 10, 2),
    ]
    return records, taxonomies.build(records, RenameMap.with_extra(()), [read_crosswalk(path)])


def test_each_crosswalk_target_is_a_head_taught_by_the_older_papers(built):
    records, heads = built
    assert heads.names == ["OLD 2024 + OTHER 2024", "NEW 2025"]
    main, new = heads.heads
    assert set(main.data.labels) == set(OLD)  # the main taxonomy keeps the older names; NEW's papers are not in it
    assert len(main.data.y) == 2 * 4 * 12
    assert set(new.data.space.labels) == set(NEW)
    own = new.data.native_rows
    assert len(own) == 6 * 10 and all(new.data.records[i].origin == "NEW 2025" for i in own)
    mapped = [new.data.labels[i] for i in range(len(new.data.y)) if not new.data.native[i]]
    # the area rename and the split (one copy per new name holding >= 20%): every older paper teaches NEW 2025
    assert mapped.count("General Machine Learning · Causality") == 24
    assert mapped.count("Social Aspects · Safety") == mapped.count("Social Aspects · Security") == 24
    assert "Miscellaneous Aspects of Machine Learning · Causality" not in new.data.space.labels
    assert len(mapped) == 2 * 4 * 12 + 24  # no older paper dropped; the split one twice


def test_the_temporal_holdout_of_a_head_tests_its_own_papers_only(built):
    _, heads = built
    new = heads.heads[1].data
    temporal, _ = temporal_direction(new)
    assert temporal is not None
    assert set(temporal.test) == set(new.native_rows)
    assert all(new.years[i] == 2024 for i in temporal.train)


def test_a_crosswalk_naming_an_absent_label_is_an_error_with_its_line(tmp_path, built):
    records, _ = built
    path = tmp_path / "bad.yaml"
    path.write_text("to: NEW 2025\nmap:\n  Theory · Game Theory: Theory · Everything Else\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"bad\.yaml:3: 'Theory · Game Theory' is the label of no training record"):
        taxonomies.build(records, RenameMap.with_extra(()), [read_crosswalk(path)])


def test_a_crosswalk_whose_target_has_no_papers_is_said_and_not_used(tmp_path, built):
    records, _ = built
    path = tmp_path / "elsewhere.yaml"
    path.write_text("to: ICML 2031\nmap:\n  Theory · Learning Theory: Theory · Everything Else\n", encoding="utf-8")
    heads = taxonomies.build(records, RenameMap.with_extra(()), [read_crosswalk(path)])
    # NEW 2025's names are its own: a taxonomy of its own, without a crosswalk too (taught by the names it shares)
    assert heads.names == ["OLD 2024 + OTHER 2024", "NEW 2025"]
    assert heads.heads[1].crosswalk is not None and not heads.heads[1].crosswalk.path
    assert any("no training record is from 'ICML 2031'" in n.text and n.level == "warning" for n in heads.notes)
    with pytest.raises(UsageError, match=r"elsewhere\.yaml: the crosswalk maps names to 'ICML 2031'"):
        taxonomies.build(records, RenameMap.with_extra(()), [read_crosswalk(path)], strict=True)


def test_older_names_the_target_lacks_teach_their_area_and_are_said(tmp_path):
    path = tmp_path / "partial.yaml"
    path.write_text("to: NEW 2025\nmap:\n  Theory · Learning Theory: Theory · Learning Theory\n", encoding="utf-8")
    records = [*venue_records(OLD, "OLD", 2024, 5, 0), *venue_records({**NEW, "Theory": "theorem"}, "NEW", 2025, 5, 1)]
    heads = taxonomies.build(records, RenameMap.with_extra(()), [read_crosswalk(path)])
    new = heads.heads[1].data
    # 'Theory · Learning Theory' exists in NEW; 'Deep Learning · Attention Mechanisms' too; the Misc and
    # Trustworthy tracks have no NEW name: Trustworthy's area (Social Aspects) exists -> area-only label;
    # Misc's area does not -> taught nothing, said
    assert "Social Aspects" in new.space.labels
    texts = " ".join(n.text for n in heads.notes)
    assert "teach their area: Social Aspects · Trustworthy Machine Learning (5)" in texts
    assert "teach it nothing" in texts and "Miscellaneous Aspects of Machine Learning · Causality (5)" in texts


# --------------------------------------------------------------------------- answers in a taxonomy


@pytest.fixture(scope="module")
def predictor(built):
    from sklearn.linear_model import LogisticRegression

    from papertrack.features.text import tfidf
    from papertrack.models.artifact import TrackPredictor
    from papertrack.models.card import ModelCard
    from papertrack.models.estimators import TextClassifier

    _, heads = built
    made = []
    for head in heads.heads:
        data = head.data
        classifier = TextClassifier(tfidf("word"), LogisticRegression(max_iter=300), data.space.n_labels)
        classifier.fit(data.texts, data.y)
        made.append(
            TrackPredictor(
                classifier,
                data.space,
                ModelCard(candidate="t", family="tfidf", data_digest="d", run_id="r"),
                taxonomy=head.name,
                sources=head.sources,
            )
        )
    main, other = made
    main.heads[other.taxonomy] = other
    return main


def test_answers_come_in_the_asked_taxonomys_names(predictor):
    text = "position paper: we argue the community should rethink how it calls for safety evaluation"
    default = predictor.predict([text])[0]
    asked = predictor.predict([text], taxonomy="NEW 2025")[0]
    assert default["taxonomy"] == "OLD 2024 + OTHER 2024" and asked["taxonomy"] == "NEW 2025"
    new_labels = set(NEW)
    assert {t["label"] for t in asked["tracks"]} <= new_labels
    assert {t["label"] for t in default["tracks"]} <= set(OLD)
    assert sum(a["probability"] for a in asked["areas"]) == pytest.approx(1.0)
    assert {a["area"] for a in asked["areas"]} == {
        "Theory",
        "General Machine Learning",
        "Social Aspects",
        "Deep Learning",
        "Position",
    }
    # a source's name, in any case, is its taxonomy's
    assert predictor.predict([text], taxonomy="other 2024")[0]["taxonomy"] == "OLD 2024 + OTHER 2024"
    assert predictor.predict([text], taxonomy="  new   2025 ")[0]["taxonomy"] == "NEW 2025"


def test_an_unknown_taxonomy_is_an_error_listing_the_known_ones(predictor):
    with pytest.raises(
        UsageError,
        match=r"unknown taxonomy 'ICML 2031'; this model answers in: OLD 2024 \+ OTHER "
        r"2024, NEW 2025",
    ):
        predictor.predict(["attention heads"], taxonomy="ICML 2031")


def test_top_k_is_checked_against_the_asked_taxonomy_and_the_default_is_clipped(predictor):
    assert len(predictor.predict(["attention heads"], taxonomy="NEW 2025", top_k=6)[0]["tracks"]) == 6
    with pytest.raises(TopKError, match=r"between 1 and 4 \(the number of labels of OLD 2024"):
        predictor.predict(["attention heads"], top_k=6)
    two = predictor.heads["NEW 2025"]
    small = type(two)(two.classifier, two.space, two.card)
    small.space = type(two.space).from_labels(["Theory · A", "Theory · B"])
    small.classifier = _TwoLabels()
    assert len(small.predict(["anything"])[0]["tracks"]) == 2  # default top_k 3, the model knows 2


class _TwoLabels:
    def predict_proba(self, texts):
        return np.tile([0.7, 0.3], (len(texts), 1))


# --------------------------------------------------------------------------- promotion sanity checks


def _confidence(coverage=0.9, size=3.0, threshold=0.6) -> Confidence:
    share = 0.0 if threshold >= 1.0 else 0.2  # a threshold of 1.0: no held-out paper is confident
    return Confidence(
        0.9, 0.5, 0.85, threshold, 100, empirical_coverage=coverage, mean_set_size=size, confident_share=share
    )


class _Version:
    def __init__(self, version="1", **tags):
        self.version, self.tags = version, tags


def test_a_sane_winner_has_no_problem():
    heads = {"A": (_confidence(), 80), "B": (_confidence(0.88, 10.0, 0.9), 87)}
    metric = "temporal_label_top3"
    assert promotion.sanity_problems({metric: 0.7}, {metric: 0.2}, metric, heads, _Version(n_labels="160")) == []


def test_a_winner_below_the_baseline_with_few_labels_or_degenerate_sets_is_refused():
    metric = "temporal_label_top3"
    heads = {"A": (_confidence(size=1.0), 2), "B": (_confidence(1.0, 80.0, 1.0), 87)}
    problems = promotion.sanity_problems({metric: 0.1}, {metric: 0.2}, metric, heads, _Version(n_labels="200"))
    text = "; ".join(problems)
    assert "below the majority baseline (temporal_label_top3 0.100 < 0.200)" in text
    assert "knows 89 labels, far fewer than champion v1's 200" in text
    assert "prediction sets cover 1.000 in B (nominal 0.90)" in text
    assert "prediction sets hold 80.0 of 87 labels on average in B" in text
    assert "'confident'" not in text  # said, not refused:
    assert promotion.sanity_caveats(heads) == [
        "'confident' is never true in B on its held-out papers (use its prediction sets)"
    ]
    forced = promotion.sanity_problems(
        {metric: 0.3}, {metric: 0.2}, metric, {"A": (_confidence(size=1.0), 2)}, _Version(n_labels="200"), force=True
    )
    assert forced == []


def test_a_changed_data_champion_is_compared_by_its_recipe_re_scored():
    from papertrack.training.champion import Contender

    rows = np.r_[np.ones(70), np.zeros(30)]
    better = Contender("new", 0.74, 0.3, 0.2, np.r_[np.ones(74), np.zeros(26)])
    worse = Contender("new", 0.60, 0.3, 0.2, np.r_[np.ones(60), np.zeros(40)])
    recipe = Contender("tfidf-word-logreg (champion v1's recipe)", 0.70, 0.3, 0.2, rows)
    champion = _Version("1", data_digest="aaa", candidate="tfidf-word-logreg")
    promote, reason = promotion.rescored_challenge(better, recipe, champion, "temporal_label_top3", "bbb")
    assert promote and "training data changed (aaa -> bbb); at least as good as the champion re-scored" in reason
    promote, reason = promotion.rescored_challenge(worse, recipe, champion, "temporal_label_top3", "bbb")
    assert not promote and "worse than the champion re-scored" in reason and "0.6000 vs 0.7000" in reason
    promote, reason = promotion.rescored_challenge(worse, None, champion, "temporal_label_top3", "bbb")
    assert promote and "cannot be re-scored" in reason
