"""The model card: who a fitted model is.

:class:`ModelCard` is who a fitted model is — candidate, family, training data digest, MLflow run,
its sweep's metrics (named by evaluation: ``cv_*``, ``temporal_*``, ``shift_*``, ``insample_*``), label-space
facts — built once where the winner is refit (:mod:`papertrack.training.pipeline`) and read everywhere else
(service, labeler, BentoML import). The answer a model gives is :mod:`papertrack.models.answer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class ModelCard:
    candidate: str
    family: str
    data_digest: str
    run_id: str
    metrics: Mapping[str, float] = field(default_factory=dict)
    n_labels: int = 0
    n_areas: int = 0
    use_title: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", MappingProxyType({k: float(v) for k, v in dict(self.metrics).items()}))

    def short(self) -> str:
        """``candidate, run 1a2b3c4d`` — how logs and summaries name the model."""
        return f"{self.candidate}, run {self.run_id[:8]}"

    def identity(self) -> dict[str, str]:
        """What must not change between an interrupted labeling run and its resume."""
        return {"run_id": self.run_id, "data_digest": self.data_digest, "candidate": self.candidate}

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "family": self.family,
            "data_digest": self.data_digest,
            "run_id": self.run_id,
            "metrics": dict(self.metrics),
            "n_labels": self.n_labels,
            "n_areas": self.n_areas,
            "use_title": self.use_title,
        }

    def __reduce__(self) -> tuple[type[ModelCard], tuple[Any, ...]]:
        """Pickled as its constructor's arguments (the read-only metrics mapping itself does not pickle)."""
        state = self.to_dict()
        return type(self), tuple(state[f.name] for f in fields(self))
