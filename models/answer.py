"""THE answer for one abstract, written once: the pydantic models :class:`Track`, :class:`AreaScore`, :class:`Answer`.

Everything else that states the answer's shape comes from here or is checked against it:

* :meth:`TrackPredictor.predict` returns plain dicts (fast to build, the same JSON as always); their static types
  :class:`TrackDict`, :class:`AreaScoreDict`, :class:`AnswerDict` are checked field by field against the models
  (``tests/models/test_answer_schema.py``) — a type checker cannot read a ``TypedDict`` built at run time;
* the MLflow signature's output columns are derived from :class:`Answer` by :func:`mlflow_outputs`;
* the HTTP service's response models (``serving/schemas.py``) are these models (``PaperResult`` extends
  :class:`Answer`);
* the Spark labeler's Parquet row schema is checked against them by a test.
"""

import types
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, Union, get_args, get_origin

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from mlflow.types.schema import Schema

DEFAULT_TOP_K = 3  # tracks per answer unless asked otherwise
# an explanation's defaults (models.explain, models.neighbors), here for the request schemas: importing them costs no
# scikit-learn (the service's module is imported by `bentoml serve`'s own process too, which explains nothing)
DEFAULT_TERMS = 10  # terms per explained track
DEFAULT_NEIGHBORS = 5  # similar labeled training abstracts per explanation


class Track(BaseModel):
    label: str = Field(description='"Area · Subarea", or the area alone for area-only labels.')
    area: str
    subarea: str | None = None
    probability: float


class AreaScore(BaseModel):
    area: str
    probability: float = Field(description="Sum of the probabilities of the area's labels.")


class Answer(BaseModel):
    """The answer for one abstract: ranked tracks, every area, and (calibrated artifacts) the confidence fields."""

    tracks: list[Track] = Field(description="The top_k tracks, most probable first.")
    areas: list[AreaScore] = Field(description="Every area, most probable first.")
    prediction_set: list[str] | None = Field(
        None,
        description=(
            "Conformal prediction set: the most probable labels that together hold the true one for about 90% of "
            "abstracts (nominal coverage, calibrated on held-out predictions at training time)."
        ),
    )
    confident: bool | None = Field(
        None,
        description=(
            "True when the top-1 probability reaches the threshold chosen at training time for the target "
            "top-1 precision; false means: treat the answer as unsure and look at prediction_set."
        ),
    )
    taxonomy: str | None = Field(
        None,
        description=(
            'The taxonomy the tracks and areas are named in (e.g. "ICML 2025"): the one asked for, else the '
            "model's default (GET /metadata lists them). Probabilities sum to 1 over its tracks."
        ),
    )
    warning: str | None = Field(
        None,
        description=(
            "Set when most of the abstract's words are outside the model's training vocabulary (another language, "
            "not an ML abstract): the tracks are then a guess. Absent or null otherwise."
        ),
    )


RANKED_FIELDS = ("tracks", "areas")
"""The answer fields every artifact gives."""
CONFIDENCE_FIELDS = ("prediction_set", "confident")
"""The answer fields a calibrated artifact adds (models/confidence.py)."""
EXTRA_FIELDS = (*CONFIDENCE_FIELDS, "warning")
"""The answer fields beyond the ranked ones that may be present: e.g. the labeler's CSV columns."""


# --------------------------------------------------------------------------- the plain-dict form
# (this module has no ``from __future__ import annotations``: NotRequired must be seen at run time)


class TrackDict(TypedDict):
    label: str
    area: str
    subarea: str | None  # always present; None for an area-only label
    probability: float


class AreaScoreDict(TypedDict):
    area: str
    probability: float


class AnswerDict(TypedDict):
    tracks: list[TrackDict]
    areas: list[AreaScoreDict]
    # present when the artifact carries a confidence calibration (models/confidence.py):
    prediction_set: NotRequired[list[str]]  # conformal set at the nominal coverage, most probable first
    confident: NotRequired[bool]  # top-1 probability reaches the threshold chosen for the target precision
    taxonomy: NotRequired[str]  # the taxonomy the tracks are named in (artifacts trained with taxonomies)
    warning: NotRequired[str]  # most of the abstract's words are outside the training vocabulary (models/request.py)


# --------------------------------------------------------------------------- the MLflow signature

_MLFLOW_TYPES = {str: "string", float: "double", bool: "boolean", int: "long"}


def _optional(annotation: Any) -> tuple[Any, bool]:
    """(the annotation without ``None``, whether ``None`` was allowed)."""
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return members[0], len(members) < len(get_args(annotation))
    return annotation, False


def mlflow_type(annotation: Any) -> Any:
    """The MLflow schema type of a field annotation: a scalar name, ``Array`` of it, or ``Object`` of a model."""
    from mlflow.types.schema import Array, Object, Property

    annotation, _ = _optional(annotation)
    if annotation in _MLFLOW_TYPES:
        return _MLFLOW_TYPES[annotation]
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        return Array(mlflow_type(item))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return Object(
            [
                Property(name, mlflow_type(field.annotation), required=field.is_required())
                for name, field in annotation.model_fields.items()
            ]
        )
    raise TypeError(f"no MLflow type for {annotation!r}")


def mlflow_outputs(model: type[BaseModel] = Answer) -> "Schema":
    """The MLflow signature's output columns: one column per field of ``model``; optional fields not required."""
    from mlflow.types.schema import ColSpec, Schema

    return Schema(
        [
            ColSpec(mlflow_type(field.annotation), name, required=field.is_required())
            for name, field in model.model_fields.items()
        ]
    )
