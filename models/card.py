"""The model card and the typed answers of the prediction artifact.

:class:`ModelCard` is who a fitted model is — candidate, family, training data digest, MLflow run,
its sweep's metrics (named by evaluation: ``cv_*``, ``temporal_*``, ``shift_*``, ``insample_*``), label-space
facts — built once where the winner is refit (:mod:`papertrack.training.pipeline`) and read everywhere else
(service, labeler, BentoML import).
:class:`Track`, :class:`AreaScore` and :class:`Answer` are what :meth:`TrackPredictor.predict`
returns; they are ``TypedDict``s, so an answer serialises to exactly the JSON it always had (plus
``prediction_set`` and ``confident`` when the artifact is calibrated).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NotRequired, TypedDict

DEFAULT_TOP_K = 3  # tracks per answer unless asked otherwise


class Track(TypedDict):
    label: str
    area: str
    subarea: str | None
    probability: float


class AreaScore(TypedDict):
    area: str
    probability: float


CONFIDENCE_FIELDS = ("prediction_set", "confident")
"""The answer fields a calibrated artifact adds (models/confidence.py); e.g. the labeler's CSV columns."""


class Answer(TypedDict):
    tracks: list[Track]
    areas: list[AreaScore]
    # present when the artifact carries a confidence calibration (models/confidence.py):
    prediction_set: NotRequired[list[str]]  # conformal set at the nominal coverage, most probable first
    confident: NotRequired[bool]  # top-1 probability reaches the threshold chosen for the target precision


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

    @classmethod
    def from_info(
        cls, info: Mapping[str, Any], n_labels: int = 0, n_areas: int = 0, use_title: bool = False
    ) -> ModelCard:
        """The card of a model logged before cards existed (its ``info`` dict); missing facts are ''."""
        return cls(
            candidate=str(info.get("candidate") or ""),
            family=str(info.get("family") or ""),
            data_digest=str(info.get("data_digest") or ""),
            run_id=str(info.get("run_id") or ""),
            metrics=dict(info.get("metrics") or {}),
            n_labels=n_labels,
            n_areas=n_areas,
            use_title=use_title,
        )

    def __getstate__(self):
        return self.to_dict()

    def __setstate__(self, state):
        for key, value in state.items():
            object.__setattr__(self, key, value)
        self.__post_init__()
