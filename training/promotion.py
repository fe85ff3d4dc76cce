"""The champion rule at promotion time: a sweep's winner against the registered champion.

Within a sweep, :func:`papertrack.training.champion.choose_champion` keeps a much cheaper candidate when a
costlier one is within noise of it. Promotion must not undo that: a later ``papertrack train -c COSTLY`` on
the same data would otherwise replace a cheap champion on a higher point estimate alone. So the winner's
per-row hits on the selection holdout are stored with its run (:data:`HITS_ARTIFACT`), and when a new winner
and the champion were selected on the same data and rows, and one costs more than ``COST_FACTOR`` times the
other, the same rule decides between the two (paired bootstrap on the same rows). Otherwise — costs within
``COST_FACTOR`` of each other, different data, a champion without stored hits — the registry's plain gate
decides (:func:`papertrack.registry.gate`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from papertrack import registry
from papertrack.training.champion import COST_FACTOR, Contender, choose_champion

HITS_ARTIFACT = "selection_hits.json"
COST_METRIC = "predict_ms_per_abstract"


def log_hits(run_id: str, contender: Contender, metric: str, digest: str) -> None:
    """Store the winner's per-row hits on the selection holdout with its run (read back by a later promotion)."""
    from papertrack.store import client

    client().log_dict(
        run_id, {"metric": metric, "data_digest": digest, "hits": contender.hits.astype(int).tolist()}, HITS_ARTIFACT
    )


def stored_contender(version, metric: str, digest: str) -> Contender | None:
    """The registered ``version`` as a contender: its hits (from its run), metric and cost (from its tags);
    None when it was selected on other data, by another metric, or has no stored hits."""
    import mlflow

    metrics = registry.version_metrics(version)
    run_id = version.tags.get("run_id")
    if version.tags.get("data_digest") != digest or metric not in metrics or COST_METRIC not in metrics or not run_id:
        return None
    try:
        stored = mlflow.artifacts.load_dict(f"runs:/{run_id}/{HITS_ARTIFACT}")
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


def cost_challenge(new: Contender, metric: str, digest: str) -> Callable[[object], tuple[bool, str] | None]:
    """For :func:`papertrack.registry.register`: the rule above against whichever version is champion when
    the registration is decided."""

    def challenge(champion) -> tuple[bool, str] | None:
        stored = stored_contender(champion, metric, digest)
        return None if stored is None else decide(new, stored, metric)

    return challenge
