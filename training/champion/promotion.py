"""The champion rule at promotion time: a sweep's winner against the registered champion.

Three things decide, in this order (the decision and its numbers are printed and stored on the version):

1. **Sanity checks** (:func:`sanity_problems`): a winner below the majority baseline on the yardstick, one that
   knows far fewer labels than the champion (fewer than :data:`FEW_LABELS` of them; ``train --force`` allows it),
   or one whose calibration degenerates in any taxonomy (empirical coverage more than :data:`COVERAGE_SLACK` from
   nominal, prediction sets of more than :data:`MAX_SET_SHARE` of the labels on average) never replaces a
   champion; a taxonomy where ``confident`` is never true on the held-out papers is said in the decision
   (:func:`sanity_caveats`), not refused. The first model of a store becomes champion whatever
   they say (there is nothing better to serve), with the problems in its reason.
2. **Data changed** (the champion was trained on other data): its *recipe* — the candidate it was, by name — is
   re-scored on the new sweep's holdouts (its result in this sweep, or evaluated for the decision when the sweep
   did not run it), and the champion rule below decides between the two on the same rows. The champion artifact
   itself is not re-scored: it may have been trained on the new holdout's papers. A champion whose candidate this
   papertrack does not know cannot be re-scored: the winner is then promoted, and the reason says so.
3. **Same data**: as below.

Within a sweep, :func:`papertrack.training.champion.selection.choose_champion` keeps a much cheaper candidate when a
costlier one is within noise of it. Promotion must not undo that: a later ``papertrack train -c COSTLY`` on
the same data would otherwise replace a cheap champion on a higher point estimate alone. So the winner's
per-row hits on the selection holdout are stored with its run (:data:`HITS_ARTIFACT`), and when a new winner
and the champion were selected on the same data and rows, and one costs more than ``COST_FACTOR`` times the
other, the same rule decides between the two (paired bootstrap on the same rows). Otherwise — costs within
``COST_FACTOR`` of each other, different data, a champion without stored hits — the plain gate decides
(:func:`gate`): a new winner becomes ``champion`` only when it beats the current champion's primary metric measured
on the same data digest (label top-3 on the temporal holdout, macro-F1 breaking ties; with one year, on the shift
holdout; with one source, cross-validated); otherwise it is registered as ``challenger`` and the reason is given.

:func:`promotion_rule` composes the above into the one decision :func:`papertrack.registry.register` asks for, with
the champion read at decision time (after earlier concurrent registrations have set their aliases).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from papertrack import registry
from papertrack.store import Store
from papertrack.training.champion.selection import COST_FACTOR, Contender, choose_champion

HITS_ARTIFACT = "selection_hits.json"
COST_METRIC = "predict_ms_per_abstract"
FEW_LABELS = 0.5  # a winner knowing fewer than this share of the champion's labels needs --force
COVERAGE_SLACK = 0.05  # empirical coverage of the prediction sets may be this far from nominal
MAX_SET_SHARE = 0.8  # mean prediction-set size at most this share of the labels ("sets of nearly every label")


def sanity_problems(
    metrics: dict[str, float],
    baseline: dict[str, float],
    metric: str,
    heads: dict[str, tuple[object, int]],
    champion=None,
    force: bool = False,
    default_slug: str = "",
) -> list[str]:
    """Why the winner must not become champion, whatever the champion is ([] when nothing is wrong).

    ``heads``: taxonomy name -> (its Confidence, its number of labels); ``champion``: the registered version (its
    ``n_labels`` tag) or None; ``default_slug``: the default taxonomy's metric suffix (the baseline is scored there).
    """
    problems = []
    own = metrics.get(f"{metric}.{default_slug}", metrics.get(metric)) if default_slug else metrics.get(metric)
    floor = baseline.get(metric)
    if own is not None and floor is not None and own < floor:
        problems.append(f"below the majority baseline ({metric} {own:.3f} < {floor:.3f})")
    n_labels = sum(n for _, n in heads.values())
    try:
        champion_labels = int(champion.tags.get("n_labels")) if champion is not None else None
    except (TypeError, ValueError):
        champion_labels = None
    if champion_labels and n_labels < FEW_LABELS * champion_labels and not force:
        problems.append(
            f"knows {n_labels} labels, far fewer than champion v{champion.version}'s {champion_labels} "
            "(train --force promotes it all the same)"
        )
    for name, (confidence, labels) in heads.items():
        if confidence is None:
            continue
        where = f" in {name}" if name else ""
        off = abs(confidence.empirical_coverage - confidence.coverage)
        if not off <= COVERAGE_SLACK:
            problems.append(
                f"prediction sets cover {confidence.empirical_coverage:.3f}{where} (nominal {confidence.coverage:.2f})"
            )
        if not confidence.mean_set_size <= MAX_SET_SHARE * labels:
            problems.append(f"prediction sets hold {confidence.mean_set_size:.1f} of {labels} labels on average{where}")
    return problems


def sanity_caveats(heads: dict[str, tuple[object, int]]) -> list[str]:
    """What the decision should say without refusing the winner: a taxonomy where ``confident`` is never true on
    the held-out papers (its top-1 never reaches the target precision on enough of them — e.g. a re-cut taxonomy
    with few papers of its own); its prediction sets still say how sure it is."""
    return [
        f"'confident' is never true in {name or 'the model'} on its held-out papers (use its prediction sets)"
        for name, (confidence, _) in heads.items()
        if confidence is not None and not getattr(confidence, "confident_share", 1.0) > 0
    ]


def rescored_challenge(new: Contender, rescored: Contender | None, champion, metric: str, digest: str):
    """The decision when the champion was trained on other data: its recipe re-scored on this sweep's holdouts
    (``rescored``; None when it could not be) against the new winner, by the champion rule."""
    old_digest = champion.tags.get("data_digest")
    changed = f"training data changed ({old_digest} -> {digest})"
    if rescored is None:
        return True, (
            f"{changed}; champion v{champion.version}'s candidate {champion.tags.get('candidate', '?')!r} cannot "
            "be re-scored on the new holdout (unknown to this papertrack): promoted on the sanity checks alone"
        )
    choice = choose_champion([new, rescored], metric)
    promote = choice.winner == new.name
    numbers = f"{metric} {new.score:.4f} vs {rescored.score:.4f} for champion v{champion.version}'s recipe"
    verb = "at least as good as" if promote else "worse than"
    return promote, (
        f"{changed}; {verb} the champion re-scored on the new holdout ({rescored.name} refit on its training "
        f"side): {numbers}; {choice.reason}"
    )


def log_hits(store: Store, run_id: str, contender: Contender, metric: str, digest: str) -> None:
    """Store the winner's per-row hits on the selection holdout with its run (read back by a later promotion)."""
    store.client().log_dict(
        run_id, {"metric": metric, "data_digest": digest, "hits": contender.hits.astype(int).tolist()}, HITS_ARTIFACT
    )


def stored_contender(store: Store, version, metric: str, digest: str) -> Contender | None:
    """The registered ``version`` of ``store`` as a contender: its hits (from its run), metric and cost (from its
    tags); None when it was selected on other data, by another metric, or has no stored hits."""
    metrics = registry.version_metrics(version)
    run_id = version.tags.get("run_id")
    if version.tags.get("data_digest") != digest or metric not in metrics or COST_METRIC not in metrics or not run_id:
        return None
    try:
        stored = load_hits(store, run_id)
    except Exception:  # no stored hits (a version registered before they were stored), unreadable store: the plain gate
        return None
    if registry.current_metric_name(str(stored.get("metric"))) != metric or stored.get("data_digest") != digest:
        return None
    tiebreak = registry.TIEBREAK_OF.get(metric, registry.CV_TIEBREAK_METRIC)
    return Contender(
        f"champion v{version.version} ({version.tags.get('candidate', '?')})",
        metrics[metric],
        metrics.get(tiebreak, 0.0),
        metrics[COST_METRIC],
        np.asarray(stored["hits"], dtype=np.float64),
    )


def decide(new: Contender, champion: Contender, metric: str) -> tuple[bool, str] | None:
    """The champion rule between a new winner and the champion, when one costs more than COST_FACTOR times the
    other and both were scored on the same rows: (promote the new one?, why); else None (the plain gate)."""
    if len(new.hits) != len(champion.hits):
        return None
    cheap, costly = sorted((new, champion), key=lambda c: c.cost_ms)
    if costly.cost_ms <= COST_FACTOR * cheap.cost_ms:
        return None
    choice = choose_champion([new, champion], metric)
    verb = "beats" if choice.winner == new.name else "does not beat"
    return choice.winner == new.name, f"{verb} the champion by the champion rule: {choice.reason}"


def load_hits(store: Store, run_id: str) -> dict:
    """The hits :func:`log_hits` stored with ``run_id`` (an MLflow error when there are none)."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = store.client().download_artifacts(run_id, HITS_ARTIFACT, tmp)
        with open(path, encoding="utf-8") as file:
            return json.load(file)


def cost_challenge(
    store: Store, new: Contender, metric: str, digest: str
) -> Callable[[object], tuple[bool, str] | None]:
    """For :func:`promotion_rule`: the rule above against whichever version is champion when the registration is
    decided."""

    def challenge(champion) -> tuple[bool, str] | None:
        stored = stored_contender(store, champion, metric, digest)
        return None if stored is None else decide(new, stored, metric)

    return challenge


def _metrics_of(version) -> dict[str, float] | None:
    metrics = registry.version_metrics(version)
    if registry.CV_PRIMARY_METRIC not in metrics or registry.CV_TIEBREAK_METRIC not in metrics:
        return None
    return metrics


def gate(new_metrics: dict[str, float], new_digest: str, champion) -> tuple[bool, str]:
    """The plain gate: whether the new model may become champion, and why."""
    if champion is None:
        return True, "no champion yet"
    old_digest = champion.tags.get("data_digest")
    old = _metrics_of(champion)
    if old_digest != new_digest:
        return True, f"training data changed (digest {old_digest} -> {new_digest}); metrics are not comparable"
    if old is None:
        return True, f"champion version {champion.version} has no recorded metrics"
    primary, tiebreak = registry.ranking_metrics(new_metrics, old)
    new_key = (round(new_metrics[primary], 6), round(new_metrics[tiebreak], 6))
    old_key = (round(old[primary], 6), round(old[tiebreak], 6))
    summary = (
        f"{primary} {new_metrics[primary]:.4f} vs champion v{champion.version} "
        f"{old[primary]:.4f} ({tiebreak} {new_metrics[tiebreak]:.4f} vs "
        f"{old[tiebreak]:.4f}) on the same data"
    )
    if new_key > old_key:
        return True, "beats the champion: " + summary
    return False, "does not beat the champion: " + summary


def promotion_rule(
    metrics: dict[str, float],
    digest: str,
    challenge: Callable[[Any], tuple[bool, str] | None] | None = None,
    refuse: Callable[[Any], list[str]] | None = None,
    caveats: Sequence[str] = (),
) -> Callable[[Any], registry.Verdict]:
    """The decision :func:`papertrack.registry.register` applies to the champion it reads at decision time (a
    ModelVersion, or None when nothing is registered): ``challenge(champion)``, when given, decides first (the cost
    rule, the re-scored challenge); when it returns None, :func:`gate` decides. ``refuse(champion)``, when given,
    lists why the model must not be promoted whatever the comparison says (the sanity checks); the first model of a
    store is promoted all the same, its problems said. ``caveats`` are said, never refused. A champion trained on
    other data is recorded on the new version (its ``data_change`` tag)."""

    def decide(champion) -> registry.Verdict:
        problems = refuse(champion) if refuse is not None else []
        decided = challenge(champion) if challenge is not None and champion is not None else None
        promote, reason = decided if decided is not None else gate(metrics, digest, champion)
        if problems and champion is not None:
            promote, reason = False, "not promoted: " + "; ".join(problems) + f" (otherwise: {reason})"
        elif problems:  # nothing better to serve: the first model is champion, its problems said
            reason += " — but check it: " + "; ".join(problems)
        if caveats:
            reason += " (note: " + "; ".join(caveats) + ")"
        tags = {}
        if champion is not None and champion.tags.get("data_digest") != digest:
            tags["data_change"] = (
                f"{champion.tags.get('data_digest')} -> {digest} (previous champion v{champion.version})"
            )
        return registry.Verdict(promote, reason, tags)

    return decide
