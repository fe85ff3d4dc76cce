"""The model registry: reads and writes registered versions, their aliases and tags (read by serving, written by
training), and the metric names a version records. It decides nothing: which version becomes ``champion`` is the
champion rule's (:mod:`papertrack.training.champion`), passed to :func:`register` as ``decide``.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mlflow.exceptions import MlflowException

from papertrack.settings import CHALLENGER, CHAMPION, MODEL_NAME
from papertrack.store import Store, using

TEMPORAL_PRIMARY_METRIC = "temporal_label_top3"  # label top-3 on the latest year, trained on the earlier ones
TEMPORAL_TIEBREAK_METRIC = "temporal_label_macro_f1"
PRIMARY_METRIC = "shift_label_top3"  # label top-3 on the shift holdout (leave one source out): one year only
TIEBREAK_METRIC = "shift_label_macro_f1"
CV_PRIMARY_METRIC = "cv_label_top3"  # the primary metric when the data has one source (no shift holdout)
CV_TIEBREAK_METRIC = "cv_label_macro_f1"
# (primary, tie-breaker) in order of preference: the first pair every compared metrics dict has is used
RANKINGS = (
    (TEMPORAL_PRIMARY_METRIC, TEMPORAL_TIEBREAK_METRIC),
    (PRIMARY_METRIC, TIEBREAK_METRIC),
    (CV_PRIMARY_METRIC, CV_TIEBREAK_METRIC),
)
TIEBREAK_OF = dict(RANKINGS)
# metric names before every evaluation had its prefix (cv_, shift_, temporal_, insample_): runs and registered
# versions logged then carry these; they are read under their current names
LEGACY_METRIC_NAMES = {
    **{
        name: f"cv_{name}"
        for name in ("label_top1", "label_top3", "label_macro_f1", "area_top1", "area_macro_f1", "log_loss", "ece")
    },
    "fit_seconds": "cv_fit_seconds",
}
# model-version tags that describe the version; every other tag with a numeric value is a metric
INFO_TAGS = ("data_digest", "candidate", "run_id", "gate", "data_change", "n_labels", "taxonomies", "owner")
OWNER_TAG = "owner"  # who is registering a version: "<pid>@<host> started <process start time>", set at creation
DECISION_TAG_PREFIX = "champion_rule"  # the champion rule's decision and its numbers (not metrics)
SETTLE_TIMEOUT = 300.0  # seconds a registration waits for earlier, concurrent ones to set their alias
IN_FLIGHT_SECONDS = 15 * 60  # an undecided version younger than this (before ours) is still being decided

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verdict:
    """The champion rule's answer for one registration: promote (alias ``champion``) or not (``challenger``), why,
    and more tags to record on the new version (e.g. ``data_change``)."""

    promote: bool
    reason: str
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class Decision:
    version: str
    alias: str  # champion or challenger
    reason: str
    previous_champion: str | None


def current_metric_name(name: str) -> str:
    """A metric's current name (``label_top3`` logged by an earlier version is ``cv_label_top3``)."""
    return LEGACY_METRIC_NAMES.get(name, name)


def current_names(metrics: dict[str, float]) -> dict[str, float]:
    """``metrics`` under their current names (a current name wins over a legacy one)."""
    out = {k: v for k, v in metrics.items() if k not in LEGACY_METRIC_NAMES}
    for old, new in LEGACY_METRIC_NAMES.items():
        if old in metrics and new not in out:
            out[new] = metrics[old]
    return out


def ranking_metrics(metrics: dict[str, float], *others: dict[str, float]) -> tuple[str, str]:
    """(primary, tie-breaker) metric names: the temporal holdout's when every metrics dict has them, else
    the shift holdout's, else the cross-validated ones."""
    for primary, tiebreak in RANKINGS[:-1]:
        if all(primary in m and tiebreak in m for m in (metrics, *others)):
            return primary, tiebreak
    return CV_PRIMARY_METRIC, CV_TIEBREAK_METRIC


def rank_key(metrics: dict[str, float]) -> tuple[float, float]:
    """Higher is better: the primary metric, then the tie-breaker (temporal holdout, else shift, else CV)."""
    metrics = current_names(metrics)
    primary, tiebreak = ranking_metrics(metrics)
    return (round(metrics[primary], 6), round(metrics[tiebreak], 6))


def version_by_alias(store: Store, alias: str, name: str = MODEL_NAME):
    """The ModelVersion behind ``name@alias`` in ``store``, or None when there is none."""
    try:
        return store.client().get_model_version_by_alias(name, alias)
    except MlflowException:
        return None


def current_champion(store: Store, name: str = MODEL_NAME):
    """The champion's ModelVersion in ``store``, or None when nothing is registered yet."""
    return version_by_alias(store, CHAMPION, name)


def version_metrics(version) -> dict[str, float]:
    """The metrics recorded as tags on a registered version, under their current names (a version registered
    before the metric names had their evaluation's prefix is read as if it had them)."""
    metrics = {}
    for key, value in (version.tags or {}).items():
        if key in INFO_TAGS or key.startswith(DECISION_TAG_PREFIX):
            continue
        try:
            metrics[key] = float(value)
        except (TypeError, ValueError):
            continue
    return current_names(metrics)


def register(
    store: Store,
    model_uri: str,
    run_id: str,
    metrics: dict[str, float],
    digest: str,
    candidate: str,
    decide: Callable[[Any], Verdict],
    name: str = MODEL_NAME,
    decision_tags: dict[str, str] | None = None,
    info: dict[str, str] | None = None,
) -> Decision:
    """Register the model version in ``store``, tag it (data digest, candidate, run, ``info``, its metrics and
    ``decision_tags``: keys starting with ``champion_rule``, why this candidate won its sweep) and give it the alias
    ``decide(champion)`` says: ``champion`` or ``challenger``. ``decide`` is the champion rule
    (:func:`papertrack.training.champion.promotion.promotion_rule`); it is given the champion read at decision time
    (a ModelVersion, or None).

    Concurrent ``train`` runs against one store (a team tracking server) are decided one after the other,
    in the order of their version numbers (the store hands those out atomically): ``decide`` is given the
    champion read *after* every earlier registration has set its alias (see ``_wait_for_earlier``),
    never the champion seen before registering. So two runs racing can never both become champion,
    and the outcome is the one of running them one after the other in version order.
    """
    with using(store):  # mlflow.register_model reads MLflow's process-wide registry URI only
        import mlflow

        # the owner is a tag of the version from its creation: a later train knows at once when it is abandoned
        version = mlflow.register_model(model_uri, name, tags={OWNER_TAG: owner()})
    c = store.client()
    try:
        return _decide(store, c, name, version, run_id, metrics, digest, candidate, decide, decision_tags, info)
    except BaseException as exc:  # Ctrl-C, a failure: the version says it was never decided (later trains go on)
        try:
            c.set_model_version_tag(name, version.version, "gate", f"undecided: {type(exc).__name__} before its alias")
        except Exception:
            logger.debug("could not tag version %s as undecided", version.version, exc_info=True)
        raise


def _decide(store, c, name, version, run_id, metrics, digest, candidate, decide, decision_tags, info) -> Decision:
    tags = {
        "data_digest": digest,
        "candidate": candidate,
        "run_id": run_id,
        **(info or {}),
        **{k: f"{v:.6f}" for k, v in metrics.items()},
    }
    for key, value in (decision_tags or {}).items():
        if not key.startswith(DECISION_TAG_PREFIX):
            raise ValueError(f"decision tag {key!r} must start with {DECISION_TAG_PREFIX!r}")
        tags[key] = value
    for key, value in tags.items():
        c.set_model_version_tag(name, version.version, key, value)
    waited = _wait_for_earlier(c, name, version)
    champion = current_champion(store, name)  # re-read now, just before setting the alias
    verdict = decide(champion)
    promote, reason = verdict.promote, verdict.reason
    if waited:
        reason += f" ({waited})"
    for key, value in verdict.tags.items():
        c.set_model_version_tag(name, version.version, key, value)
    alias = CHAMPION if promote else CHALLENGER
    c.set_registered_model_alias(name, alias, version.version)
    # the gate tag comes last: it tells later registrations that this one's alias is set
    c.set_model_version_tag(name, version.version, "gate", reason)
    return Decision(version.version, alias, reason, champion.version if champion else None)


def _wait_for_earlier(c, name: str, version, timeout: float = SETTLE_TIMEOUT, poll: float = 0.5) -> str:
    """Wait until every lower-numbered version registered shortly before ``version`` has its ``gate`` tag.

    Only versions created within IN_FLIGHT_SECONDS before this one count as still being decided (a version
    registered by hand never gets the tag), and not those whose owner (:data:`OWNER_TAG`) is a process of this host
    that has ended: a ``train`` killed between registering and deciding is abandoned at once, not waited for.
    When it does wait, it says at once what for. Returns "" or, after ``timeout``, a note naming the versions that
    did not decide in time (this one is decided without them)."""
    mine = int(version.version)
    since = (version.creation_timestamp or 0) - IN_FLIGHT_SECONDS * 1000
    deadline = time.monotonic() + timeout
    said = False
    while True:
        pending = sorted(
            (int(v.version), (v.tags or {}).get(OWNER_TAG, "an unknown owner"))
            for v in c.search_model_versions(f"name='{name}'")
            if int(v.version) < mine
            and "gate" not in (v.tags or {})
            and (v.creation_timestamp or 0) >= since
            and not owner_gone((v.tags or {}).get(OWNER_TAG))
        )
        if not pending:
            return ""
        if not said:
            logger.warning(
                "waiting (at most %.0f s) for version(s) %s, being registered by %s, to be decided first",
                timeout,
                ", ".join(str(n) for n, _ in pending),
                "; ".join(sorted({who for _, who in pending})),
            )
            said = True
        if time.monotonic() >= deadline:
            return f"decided without waiting longer for undecided version(s) {', '.join(str(n) for n, _ in pending)}"
        time.sleep(poll)


def owner() -> str:
    """This process as a version's owner: ``<pid>@<host> started <its start time>`` (the start time tells a
    reused pid apart)."""
    import psutil

    return f"{os.getpid()}@{socket.gethostname()} started {psutil.Process().create_time():.2f}"


def owner_gone(tag: str | None) -> bool:
    """Whether the owner a version's tag names is a process of this host that has ended (or whose pid now belongs to
    another process). Owners on other hosts, and versions without the tag, are never known to be gone."""
    import psutil

    match = re.fullmatch(r"(\d+)@(\S+) started ([\d.]+)", tag or "")
    if match is None or match[2] != socket.gethostname():
        return False
    try:
        process = psutil.Process(int(match[1]))
        return process.status() == psutil.STATUS_ZOMBIE or abs(process.create_time() - float(match[3])) > 1.0
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:  # no right to look at it: it exists
        return False
