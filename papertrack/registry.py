"""The model registry (read by serving, written by training) and its promotion gate.

A new winner becomes ``champion`` only when it beats the current champion's primary metric
(label top-3, macro-F1 breaking ties) measured on the same data digest. Otherwise it is registered
as ``challenger`` and the reason is given. When the data digest differs from the champion's, the
new winner is promoted and the change of data is recorded on the new version.
"""

from __future__ import annotations

from dataclasses import dataclass

import mlflow
from mlflow.exceptions import MlflowException

from papertrack.settings import CHALLENGER, CHAMPION, MODEL_NAME
from papertrack.store import client

PRIMARY_METRIC = "label_top3"
TIEBREAK_METRIC = "label_macro_f1"
# model-version tags that describe the version; every other tag with a numeric value is a CV metric
INFO_TAGS = ("data_digest", "candidate", "run_id", "gate", "data_change")


@dataclass
class Decision:
    version: str
    alias: str  # champion or challenger
    reason: str
    previous_champion: str | None


def rank_key(metrics: dict[str, float]) -> tuple[float, float]:
    """Higher is better: the primary metric, then the tie-breaker."""
    return (round(metrics[PRIMARY_METRIC], 6), round(metrics[TIEBREAK_METRIC], 6))


def version_by_alias(alias: str, name: str = MODEL_NAME):
    """The ModelVersion behind ``name@alias``, or None when there is none."""
    try:
        return client().get_model_version_by_alias(name, alias)
    except MlflowException:
        return None


def current_champion(name: str = MODEL_NAME):
    """The champion's ModelVersion, or None when nothing is registered yet."""
    return version_by_alias(CHAMPION, name)


def version_metrics(version) -> dict[str, float]:
    """The cross-validated metrics recorded as tags on a registered version."""
    metrics = {}
    for key, value in (version.tags or {}).items():
        if key in INFO_TAGS:
            continue
        try:
            metrics[key] = float(value)
        except (TypeError, ValueError):
            continue
    return metrics


def _metrics_of(version) -> dict[str, float] | None:
    metrics = version_metrics(version)
    if PRIMARY_METRIC not in metrics or TIEBREAK_METRIC not in metrics:
        return None
    return metrics


def gate(new_metrics: dict[str, float], new_digest: str, champion) -> tuple[bool, str]:
    """Whether the new model may become champion, and why."""
    if champion is None:
        return True, "no champion yet"
    old_digest = champion.tags.get("data_digest")
    old = _metrics_of(champion)
    if old_digest != new_digest:
        return True, f"training data changed (digest {old_digest} -> {new_digest}); metrics are not comparable"
    if old is None:
        return True, f"champion version {champion.version} has no recorded metrics"
    new_key, old_key = rank_key(new_metrics), rank_key(old)
    summary = (f"{PRIMARY_METRIC} {new_metrics[PRIMARY_METRIC]:.4f} vs champion v{champion.version} "
               f"{old[PRIMARY_METRIC]:.4f} ({TIEBREAK_METRIC} {new_metrics[TIEBREAK_METRIC]:.4f} vs "
               f"{old[TIEBREAK_METRIC]:.4f}) on the same data")
    if new_key > old_key:
        return True, "beats the champion: " + summary
    return False, "does not beat the champion: " + summary


def register(model_uri: str, run_id: str, metrics: dict[str, float], digest: str, candidate: str,
             name: str = MODEL_NAME) -> Decision:
    """Register the model version and give it the champion or challenger alias."""
    champion = current_champion(name)
    promote, reason = gate(metrics, digest, champion)
    version = mlflow.register_model(model_uri, name)
    c = client()
    tags = {"data_digest": digest, "candidate": candidate, "run_id": run_id,
            **{k: f"{v:.6f}" for k, v in metrics.items()}}
    if champion is not None and champion.tags.get("data_digest") != digest:
        tags["data_change"] = f"{champion.tags.get('data_digest')} -> {digest} (previous champion v{champion.version})"
    for key, value in tags.items():
        c.set_model_version_tag(name, version.version, key, value)
    alias = CHAMPION if promote else CHALLENGER
    c.set_registered_model_alias(name, alias, version.version)
    c.set_model_version_tag(name, version.version, "gate", reason)
    return Decision(version.version, alias, reason, champion.version if champion else None)
