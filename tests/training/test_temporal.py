"""The temporal holdout (train on the earlier years, test on the latest), taxonomy renames and the cost
budget (issue 17)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from rich.console import Console
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from papertrack.errors import UsageError
from papertrack.features.ingest import Record
from papertrack.models.candidates import Candidate
from papertrack.models.ensemble import ensemble_of
from papertrack.models.estimators import TextClassifier
from papertrack.training.cv import fold_indices
from papertrack.training.data import TrainingSet, one_year_only, shift_directions, temporal_direction, year_of
from papertrack.training.evaluation import evaluate_candidates
from papertrack.training.renames import RenameMap
from tests.recording import FITTED, recording_candidate

OLD = "Applications · Genetics, Cell Biology, etc"
NEW = "Applications · Genetics, Cell Biology, Health, etc"
TOPICS = {
    "A · graphs": "graph nodes edges message passing",
    "A · language": "language tokens text model",
    "B · agents": "agent reward policy environment",
    OLD: "gene cell protein sequence",
}


def _records(origin: str, n: int, rename: bool = False, start: int = 0) -> list[Record]:
    rng = np.random.default_rng(len(origin) + n)
    out = []
    for i in range(start, start + n):
        label = list(TOPICS)[i % 4]
        words = TOPICS[label].split() + [f"w{rng.integers(50)}", f"{origin.replace(' ', '').lower()}x{i}"]
        if rename and label == OLD:
            label = NEW
        area, sub = label.split(" · ")
        out.append(
            Record(
                f"{origin}-{i}",
                " ".join(rng.permutation(words)),
                None,
                label,
                area,
                sub,
                f"{origin.split()[0].lower()}.jsonl",
                i + 1,
                origin=origin,
            )
        )
    return out


def _three_sources() -> TrainingSet:
    records = [*_records("ICLR 2024", 24), *_records("ICML 2024", 24), *_records("ICLR 2025", 16, rename=True)]
    return TrainingSet.from_records(records, renames=RenameMap())


def test_year_comes_from_the_record_else_from_the_file_name():
    base = dict(abstract="a b c", title=None, label="A · b", area="A", subarea="b", line=1)
    assert year_of(Record("1", source="x/iclr2025_dev_topics.jsonl", origin=None, **base)) == 2025
    assert year_of(Record("1", source="dump.jsonl", origin="ICML 2023", **base)) == 2023
    assert year_of(Record("1", source="papers_2019.jsonl", origin="NeurIPS 2021", **base)) == 2021
    assert year_of(Record("1", source="dump.jsonl", origin=None, **base)) is None
    assert year_of(Record("1", source="run12345.jsonl", origin=None, **base)) is None  # not a year


def test_temporal_holdout_never_lets_a_latest_year_text_into_a_fitted_step():
    data = _three_sources()
    temporal, why_not = temporal_direction(data)
    assert why_not == "" and temporal.name == "2024-to-2025"
    assert temporal.trained_on == ("ICLR 2024", "ICML 2024") and temporal.heldout == "ICLR 2025"
    assert set(data.years[temporal.train]) == {2024} and set(data.years[temporal.test]) == {2025}
    # the cross-venue shift holdout stays among the earlier years
    directions = shift_directions(data.sources, temporal.train)
    assert [d.name for d in directions] == ["icml2024-to-iclr2024", "iclr2024-to-icml2024"]
    latest = {t for t, y in zip(data.texts, data.years) if y == 2025}
    singles = [recording_candidate("rec-a", 1.0), recording_candidate("rec-b", 10.0)]
    ensemble = ensemble_of("rec-ens", singles, rule="geometric", steps=4)
    split = fold_indices(data.y, data.space, 3, 0)
    FITTED.clear()
    results = evaluate_candidates([*singles, ensemble], data, split, 0, directions=directions, temporal=temporal)
    # per single: 3 CV folds; temporal: 1 fit + 3 inner folds of its training side; shift: 2 x (1 + 3)
    # (the two singles' feature steps are identical: fitted once per fit, shared — training.fits.run_shared_fits)
    per_single = 3 + (1 + 3) + 2 * (1 + 3)
    assert len(FITTED) == per_single
    holdout_fits = FITTED[3:]  # everything but CV
    assert len(holdout_fits) == 12
    for texts in holdout_fits:
        assert not set(texts) & latest, "a latest-year text reached a fitted step of a holdout"
    ens = results[-1]
    assert set(ens.temporal.weights) == {"2024-to-2025"}  # the ensemble's weights: from the training side only
    for r in results:
        assert {"temporal_label_top3", "temporal_label_top1", "temporal_area_top1", "temporal_label_macro_f1"} <= set(
            r.metrics
        )
        assert r.selection == "temporal holdout"
        assert len(r.selection_proba) == len(r.selection_y) == 16
        np.testing.assert_array_equal(r.selection_y, data.y[temporal.test])
        hits = r.selection_hits(3)
        assert r.metrics["temporal_label_top3"] == pytest.approx(hits.mean())


def test_one_year_or_a_source_without_year_has_no_temporal_holdout():
    one_year = TrainingSet.from_records([*_records("ICLR 2024", 24), *_records("ICML 2024", 24)])
    assert temporal_direction(one_year) == (None, "one year (2024)")
    no_year = [*_records("ICLR 2024", 24), *_records("ICML 2025", 24)]
    no_year[-1] = Record("x", "graph nodes", None, "A · graphs", "A", "graphs", "dump.jsonl", 1)
    temporal, why_not = temporal_direction(TrainingSet.from_records(no_year))
    assert temporal is None and why_not.startswith("no year for dump.jsonl")


def test_rename_map_teaches_the_new_name_and_counts_it_in_evaluation():
    data = _three_sources()
    assert OLD not in data.space.labels and NEW in data.space.labels
    new = data.space.labels.index(NEW)
    old_rows = [i for i, r in enumerate(data.records) if r.label == OLD]
    new_rows = [i for i, r in enumerate(data.records) if r.label == NEW]
    assert old_rows and new_rows
    assert set(data.y[old_rows]) == set(data.y[new_rows]) == {new}  # 2024's examples teach 2025's name
    assert all(data.labels[i] == NEW for i in old_rows)
    without = TrainingSet.from_records(data.records, renames=RenameMap({}))
    assert OLD in without.space.labels and without.digest != data.digest
    # one year only: the old name exists in 2024 only when the map is off
    assert one_year_only(data) == {}
    assert one_year_only(without) == {"2024": [OLD], "2025": [NEW]}


def test_rename_map_is_extended_from_the_command_line_and_checked():
    renames = RenameMap.with_extra(["Theory->Learning Theory=Theory · Everything Else"])
    assert renames.apply("Theory · Learning Theory") == "Theory · Everything Else"
    assert renames.apply(OLD) == NEW  # the built-in map stays
    assert renames.apply("A · b") == "A · b"
    with pytest.raises(UsageError, match="OLD=NEW"):
        RenameMap.with_extra(["Theory · Learning Theory"])
    with pytest.raises(UsageError, match="cycle"):
        RenameMap.with_extra(["A · x=A · y", "A · y=A · x"])


# --------------------------------------------------------------------------- the sweep on real subsets


class Slow(TextClassifier):
    """A TextClassifier whose predictions take ``SLOW_MS`` more per abstract (module-level: it is pickled)."""

    def predict_proba(self, texts):
        time.sleep(SLOW_MS / 1000 * len(texts))
        return super().predict_proba(texts)


SLOW_MS = 8.0


def _slow(candidate: Candidate, expected_ms: float) -> Candidate:
    """``candidate`` whose predictions take SLOW_MS more per abstract, with a cost estimate of ``expected_ms``."""

    def build(n, seed):
        inner = candidate.build(n, seed)
        return Slow(inner.features, inner.classifier, n)

    return Candidate(
        f"slow-{candidate.name}", candidate.family, candidate.features, candidate.params, build, expected_ms=expected_ms
    )


@pytest.mark.slow
def test_sweep_on_three_sources_chooses_on_the_latest_year_and_reports_renames(labeled_subset, tmp_path, monkeypatch):
    from papertrack.store import open as open_store
    from papertrack.training.sweep import SweepConfig, run_sweep

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    console = Console(record=True, width=250)
    result = run_sweep(
        SweepConfig([labeled_subset], candidate_names=["tfidf-word-cnb"], folds=2, seed=1, register=False),
        open_store,
        console=console,
    )
    text = console.export_text()
    assert "temporal holdout: train on ICLR 2024 + ICML 2024" in text and "test on ICLR 2025" in text
    assert f"renamed tracks (the latest name is taught): {OLD} -> {NEW}" in text
    assert "label(s) only in 2024" in text
    assert result.choice.metric == "temporal_label_top3"
    assert result.yardstick == "temporal holdout (2024-to-2025)"
    n_2025 = sum(1 for line in labeled_subset.read_text().splitlines() if '"year": 2025' in line)
    # the champion (and the calibration) are chosen on the latest year's rows only (one duplicate dropped)
    assert len(result.winner.selection_y) == result.sources["ICLR 2025"] >= n_2025 - 2


@pytest.mark.slow
def test_budget_leaves_a_costly_candidate_out_by_default_and_lets_it_win_when_named(data_dir, tmp_path, monkeypatch):
    from papertrack.models import catalogue
    from papertrack.store import open as open_store
    from papertrack.training.sweep import SweepConfig, run_sweep
    from tests.conftest import THREE_SOURCES, sources_subset

    # two records per label and source: the slow candidate sleeps for every abstract it answers
    labeled_subset = sources_subset(data_dir, tmp_path / "subset.jsonl", 2, THREE_SOURCES)

    good = _slow(catalogue.CANDIDATES["tfidf-word-logreg"], expected_ms=50.0)
    weak = catalogue.CANDIDATES["majority-baseline"]
    weak = Candidate("weak", "baseline-like", weak.features, weak.params, weak.build, expected_ms=0.01)
    monkeypatch.setattr(catalogue, "default_sweep", lambda: [weak, good])
    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))

    console = Console(record=True, width=250)
    default = run_sweep(SweepConfig([labeled_subset], folds=2, seed=1, register=False), open_store, console=console)
    assert [r.candidate.name for r in default.results] == ["weak"]
    assert default.over_budget == [good.name]
    assert (
        f"over the 5 ms/abstract budget, left out: {good.name} (~50 ms); include them with --budget-ms 50 or "
        f"-c NAME" in console.export_text()
    )

    larger = run_sweep(
        SweepConfig([labeled_subset], folds=2, seed=1, register=False, budget_ms=100.0),
        open_store,
        console=Console(width=250),
    )
    assert larger.winner.candidate.name == good.name and larger.over_budget == []

    named = run_sweep(
        SweepConfig(
            [labeled_subset],
            candidate_names=["weak", good.name],
            folds=2,
            seed=1,
            register=False,
            extra_candidates=[weak, good],
        ),
        open_store,
        console=Console(width=250),
    )
    assert named.winner.candidate.name == good.name
    assert named.winner.metrics["predict_ms_per_abstract"] > 5.0  # over the default budget, and still the winner

    # a candidate whose estimate is within budget but whose measured cost is not runs and cannot win
    sneaky = _slow(catalogue.CANDIDATES["tfidf-word-logreg"], expected_ms=1.0)
    monkeypatch.setattr(catalogue, "default_sweep", lambda: [weak, sneaky])
    measured = run_sweep(
        SweepConfig([labeled_subset], folds=2, seed=1, register=False), open_store, console=Console(width=250)
    )
    assert {r.candidate.name for r in measured.results} == {"weak", sneaky.name}
    assert measured.ineligible == [sneaky.name] and measured.winner.candidate.name == "weak"


@pytest.mark.slow  # fits candidates in parallel worker processes
def test_fits_side_by_side_give_the_same_results_as_one_at_a_time(monkeypatch):
    from papertrack.training import fits

    monkeypatch.setattr(fits, "SIDE_BY_SIDE_ROWS", 0)  # these 64 rows would be fitted in this process otherwise
    data = _three_sources()
    temporal, _ = temporal_direction(data)
    directions = shift_directions(data.sources, temporal.train)
    plain = Candidate(
        "plain-lr",
        "logreg",
        "tfidf",
        {},
        lambda n, seed: TextClassifier(
            TfidfVectorizer(), LogisticRegression(C=3.0, max_iter=200, random_state=seed), n
        ),
    )
    ensemble = ensemble_of("plain-ens", [plain], steps=2)
    split = fold_indices(data.y, data.space, 3, 0)
    one, two = (
        evaluate_candidates([plain, ensemble], data, split, 0, directions=directions, temporal=temporal, n_jobs=jobs)
        for jobs in (1, 2)
    )
    for a, b in zip(one, two):
        np.testing.assert_allclose(a.cv.oof_proba, b.cv.oof_proba)
        np.testing.assert_allclose(a.selection_proba, b.selection_proba)
        timing = ("seconds", "ms_per_abstract")
        assert {k: v for k, v in a.metrics.items() if not k.endswith(timing)} == {
            k: v for k, v in b.metrics.items() if not k.endswith(timing)
        }
    np.testing.assert_allclose(one[0].temporal.inner_oof["2024-to-2025"], two[0].temporal.inner_oof["2024-to-2025"])
