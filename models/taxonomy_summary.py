"""What a model answers in, per taxonomy (names, sources, labels with their training papers, calibration): saved as
JSON beside the pickled predictor (:data:`~papertrack.models.manifest.TAXONOMIES_FILE`), so that ``papertrack
taxonomies`` reads it without unpickling the predictor or importing scikit-learn."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from papertrack.models import manifest
from papertrack.models.manifest import ARTIFACTS_FOLDER, TAXONOMIES_FILE, DamagedArtifact


def describe(predictor: Any) -> list[dict]:
    """Per taxonomy of ``predictor`` (a TrackPredictor; the default first): its name, sources, labels with their
    records (the taxonomy's own labeled papers; a crosswalked taxonomy's head also learns from the older ones), areas,
    calibration."""
    out = []
    for i, head in enumerate(predictor.taxonomies):
        profile = head.training_profile
        counts = [int(c) for c in profile.label_counts] if profile is not None else [None] * head.space.n_labels
        confidence = head.confidence
        out.append(
            {
                "name": head.taxonomy or "default",
                "default": i == 0,
                "sources": list(head.sources),
                "n_labels": head.space.n_labels,
                "areas": list(head.space.areas),
                "labels": [{"label": label, "records": n} for label, n in zip(head.space.labels, counts)],
                "training_records": sum(c for c in counts if c is not None) if profile is not None else None,
                "coverage": None if confidence is None else round(float(confidence.empirical_coverage), 4),
                "mean_set_size": None if confidence is None else round(float(confidence.mean_set_size), 2),
            }
        )
    return out


def write(predictor: Any, folder: Path) -> Path:
    path = folder / TAXONOMIES_FILE
    path.write_text(json.dumps(describe(predictor), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def read(folder: Path, expected: dict[str, str], shown: str) -> list[dict] | None:
    """The summary saved in the local model ``folder``, checked against ``expected`` (the digests the tracking store
    recorded for the model's files); None when the model has none (saved by an earlier papertrack: describe the
    loaded predictor instead). A file whose digest differs is a DamagedArtifact naming it."""
    name = f"{ARTIFACTS_FOLDER}/{TAXONOMIES_FILE}"
    if name not in expected:
        return None
    try:
        data = (folder / name).read_bytes()
    except OSError as exc:
        raise DamagedArtifact(f"{folder}/{name} of {shown} cannot be read ({exc}); {manifest.RESTORE}", name) from None
    if hashlib.sha256(data).hexdigest() != expected[name]:
        raise DamagedArtifact(
            f"{folder}/{name} of {shown} is damaged (it changed since the model was logged); {manifest.RETRAIN}, or "
            f"{manifest.RESTORE}",
            name,
        )
    return json.loads(data)
