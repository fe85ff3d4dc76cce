"""The shift holdout (leave one source out), the champion's cost rule and the default training data."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

from papertrack.errors import UsageError
from papertrack.features.ingest import Record
from papertrack.models.ensemble import ensemble_of
from papertrack.training.champion import TAG, Contender, choose_champion, paired_bootstrap
from papertrack.training.cv import fold_indices
from papertrack.training.data import TrainingSet, default_data_paths, shift_directions
from papertrack.training.evaluation import evaluate_candidates
from tests.recording import FITTED, recording_candidate

TOPICS = {
    "A · graphs": "graph nodes edges message passing",
    "A · language": "language tokens text model",
    "B · agents": "agent reward policy environment",
    "B · privacy": "privacy private noise budget",
}


def _two_sources() -> TrainingSet:
    rng = np.random.default_rng(0)
    records = []
    for origin, extra in (("ICLR 2024", "deep"), ("ICML 2024", "theory")):
        for i in range(24):
            label = list(TOPICS)[i % 4]
            words = TOPICS[label].split() + [extra, f"w{rng.integers(50)}", f"{origin[:4].lower()}{i}"]
            text = " ".join(rng.permutation(words))
            records.append(
                Record(
                    f"{origin}-{i}",
                    text,
                    None,
                    label,
                    label.split(" · ")[0],
                    label.split(" · ")[1],
                    f"{origin}.jsonl",
                    i + 1,
                    origin=origin,
                )
            )
    return TrainingSet.from_records(records)


def test_shift_holdout_keeps_sources_apart_in_every_fitted_step():
    data = _two_sources()
    directions = shift_directions(data.sources)
    assert [(d.trained_on, d.heldout) for d in directions] == [
        (("ICML 2024",), "ICLR 2024"),
        (("ICLR 2024",), "ICML 2024"),
    ]
    assert [d.name for d in directions] == ["icml2024-to-iclr2024", "iclr2024-to-icml2024"]
    for d in directions:
        assert set(data.sources[d.train]) == set(d.trained_on) and set(data.sources[d.test]) == {d.heldout}
        assert sorted([*d.train, *d.test]) == list(range(len(data.y)))
    singles = [recording_candidate("rec-a", 1.0), recording_candidate("rec-b", 10.0)]
    ensemble = ensemble_of("rec-ens", singles, rule="geometric", steps=4)
    split = fold_indices(data.y, data.space, 3, 0)
    FITTED.clear()
    results = evaluate_candidates([*singles, ensemble], data, split, 0, directions=directions)

    # 3 CV folds, then per direction one fit on its training side + 3 inner folds of that side; the two singles'
    # feature steps are identical: fitted once per fit, shared (training.fits.run_shared_fits)
    assert len(FITTED) == 3 + 2 * (1 + 3)
    texts_of = {source: {t for t, s in zip(data.texts, data.sources) if s == source} for source in data.source_names}
    shift_fits = [texts for i, texts in enumerate(FITTED) if i % 11 >= 3]
    for k, texts in enumerate(shift_fits):
        d = directions[(k % 8) // 4]
        assert set(texts) <= texts_of[d.trained_on[0]], "a held-out text reached a fitted step"
        assert not set(texts) & texts_of[d.heldout]
    ens = results[-1]
    assert set(ens.shift.weights) == {d.name for d in directions}
    for r in results:
        assert {"shift_label_top3", "shift_area_top1", "shift_label_top1", "shift_label_macro_f1"} <= set(r.metrics)
        assert f"shift_label_top3.{directions[0].name}" in r.metrics
        np.testing.assert_allclose(r.selection_proba.sum(axis=1), 1.0, atol=1e-9)
        assert r.selection_y is data.y
        mean = np.mean([r.metrics[f"shift_label_top3.{d.name}"] for d in directions])
        assert r.metrics["shift_label_top3"] == pytest.approx(mean)


@pytest.mark.slow  # trains (a one-candidate sweep)
def test_one_source_falls_back_to_cross_validation_and_says_so(subset_path, tmp_path, monkeypatch):
    from papertrack.store import open as open_store
    from papertrack.training.sweep import SweepConfig, run_sweep
    from tests.conftest import stratified_subset

    one = stratified_subset(subset_path.with_suffix(".iclr2024_topics.jsonl"), tmp_path / "one.jsonl", 3)
    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    console = Console(record=True, width=200)
    result = run_sweep(
        SweepConfig([one], candidate_names=["tfidf-word-cnb"], folds=2, seed=1, register=False),
        open_store,
        console=console,
    )
    assert (
        "no temporal holdout: one year (2024); no shift holdout (one source): the champion is chosen by 2-fold "
        "cross-validation" in console.export_text()
    )
    assert not any(k.startswith("shift_") for k in result.winner.metrics)
    assert result.choice.metric == "cv_label_top3"
    np.testing.assert_array_equal(result.winner.selection_proba, result.winner.cv.oof_proba)


def _hits(rng, n, accuracy):
    return (rng.random(n) < accuracy).astype(float)


def test_cost_rule_prefers_the_cheaper_model_when_the_costly_one_is_within_noise():
    rng = np.random.default_rng(0)
    cheap = _hits(rng, 800, 0.70)
    close = np.where(rng.random(800) < 0.15, _hits(rng, 800, 0.75), cheap)  # a little better: within noise
    assert close.mean() > cheap.mean()
    choice = choose_champion(
        [
            Contender("costly", close.mean(), 0.3, 100.0, close),
            Contender("cheap", cheap.mean(), 0.3, 1.0, cheap),
            Contender("mid", cheap.mean() - 0.05, 0.3, 0.1, _hits(rng, 800, 0.6), baseline=True),
        ],
        "shift_label_top3",
    )
    assert choice.leader == "costly" and choice.winner == "cheap"
    assert "within noise of the 100x faster cheap" in choice.reason
    (comparison,) = choice.comparisons
    assert comparison.low <= 0 <= comparison.high and comparison.difference > 0
    tags = choice.tags()
    assert tags[TAG] == choice.reason and tags[f"{TAG}.winner"] == "cheap"
    assert tags[f"{TAG}.compared_with"] == "costly" and tags[f"{TAG}.cost_ratio"] == "100.0"


def test_cost_rule_keeps_the_costly_model_when_it_is_clearly_ahead():
    rng = np.random.default_rng(1)
    cheap = _hits(rng, 800, 0.60)
    better = np.where(rng.random(800) < 0.4, 1.0, cheap)  # +~0.16
    choice = choose_champion(
        [Contender("cheap", cheap.mean(), 0.3, 1.0, cheap), Contender("costly", better.mean(), 0.3, 40.0, better)],
        "shift_label_top3",
    )
    assert choice.winner == "costly" == choice.leader
    (comparison,) = choice.comparisons
    assert comparison.low > 0
    assert (
        f"{comparison.difference:+.3f} [{comparison.low:+.3f}, {comparison.high:+.3f}] over the 40x cheaper cheap"
        in choice.reason
    )
    assert choice.tags()[f"{TAG}.compared_with"] == "cheap"
    # a contender less than 5x cheaper never triggers the rule
    near = choose_champion([Contender("a", 0.71, 0.3, 4.0, better), Contender("b", 0.70, 0.3, 1.0, cheap)], "m")
    assert near.winner == "a" and near.comparisons == () and "no contender is 5x cheaper" in near.reason


def test_promotion_applies_the_cost_rule_between_a_new_winner_and_the_champion():
    from papertrack.training.champion.promotion import decide

    rng = np.random.default_rng(3)
    cheap = _hits(rng, 800, 0.70)
    close = np.where(rng.random(800) < 0.15, _hits(rng, 800, 0.75), cheap)  # a little better: within noise
    better = np.where(rng.random(800) < 0.4, 1.0, cheap)  # clearly better
    champion = Contender("champion v1 (tfidf)", cheap.mean(), 0.3, 1.0, cheap)
    # a costlier winner with a higher point estimate but within noise stays challenger ...
    promote, reason = decide(Contender("costly", close.mean(), 0.3, 80.0, close), champion, "shift_label_top3")
    assert close.mean() > cheap.mean() and promote is False
    assert reason.startswith("does not beat the champion by the champion rule") and "within noise" in reason
    # ... one clearly ahead replaces it
    promote, reason = decide(Contender("costly", better.mean(), 0.3, 80.0, better), champion, "shift_label_top3")
    assert promote is True and "over the 80x cheaper champion v1 (tfidf)" in reason
    # a much cheaper winner within noise of a costly champion replaces it (what one sweep would have chosen)
    promote, _ = decide(
        Contender("cheap", cheap.mean(), 0.3, 1.0, cheap),
        Contender("champion v2 (costly)", close.mean(), 0.3, 80.0, close),
        "shift_label_top3",
    )
    assert promote is True
    # costs within 5x, or hits on other rows: the plain gate decides
    assert decide(Contender("similar", close.mean(), 0.3, 4.0, close), champion, "shift_label_top3") is None
    assert decide(Contender("other rows", 0.9, 0.3, 80.0, close[:500]), champion, "shift_label_top3") is None


def test_paired_bootstrap_interval_covers_the_mean_difference():
    rng = np.random.default_rng(2)
    a, b = _hits(rng, 500, 0.7), _hits(rng, 500, 0.7)
    diff, low, high = paired_bootstrap(a, b)
    assert low < diff < high and diff == pytest.approx((a - b).mean())
    same = paired_bootstrap(a, a)
    assert same == (0.0, 0.0, 0.0)


def test_default_data_is_the_labeled_topics_files_and_none_is_a_clear_error(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from papertrack.cli import app

    names = ("iclr2024_topics.jsonl", "icml2024_topics.jsonl", "iclr2025_dev_topics.jsonl")
    for name in names:
        (tmp_path / name).write_text('{"abstract": "a", "label": "Theory"}\n')
    assert default_data_paths(tmp_path) == sorted(tmp_path / name for name in names)
    for name in names:
        (tmp_path / name).unlink()
    with pytest.raises(UsageError, match=r"every labeled file named \*_topics.jsonl in .* there is none"):
        default_data_paths(tmp_path)
    monkeypatch.setenv("PAPERTRACK_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    done = CliRunner().invoke(app, ["train"])
    assert done.exit_code == 2
    assert "error:" in done.output and "*_topics.jsonl" in done.output
    assert "Traceback" not in done.output
