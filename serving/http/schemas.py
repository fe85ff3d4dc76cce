"""Request and response models of the HTTP service (pydantic), with the documented request limits.

Requests are strict: no type coercion ("3" is not a top_k), no unknown fields (a typo such as
``"topk"`` is reported instead of being ignored). Every violation becomes a 400 whose ``detail``
names the field (``loc``) and says what is wrong (``msg``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from papertrack import settings
from papertrack.features.ingest import has_content
from papertrack.models.answer import DEFAULT_TOP_K, Answer
from papertrack.serving.size_limits import MAX_ABSTRACT_CHARS, MAX_BATCH, MAX_TITLE_CHARS, too_long

MAX_TOP_K = 1_000
"""Static upper bound of ``top_k``; the real bound is the model's number of labels, checked per request."""

EXAMPLE_ABSTRACT = (
    "We introduce a sparse attention mechanism for transformers that attends to a learned subset of "
    "tokens, reducing the quadratic cost of self-attention while matching dense attention on language "
    "modeling and long-range benchmarks."
)


CONTENT_PATTERN = r"[^\W_]"
"""At least one letter or digit (what :func:`~papertrack.features.ingest.has_content` checks), as the spec says it.
Checked by the validator below, whose messages say what to fix; the spec only documents it."""


def _abstract_text(value: str) -> str:
    """The abstract, or the 400 saying what to fix: empty, over the limit (a whole paper), no letter or digit."""
    if not value.strip():
        what = "empty" if not value else "empty (only whitespace)"
        raise PydanticCustomError("blank_abstract", f"the abstract is {what}: send the paper's abstract text")
    if len(value) > MAX_ABSTRACT_CHARS:
        raise PydanticCustomError("abstract_too_long", too_long("abstract", len(value), MAX_ABSTRACT_CHARS))
    if not has_content(value):
        raise PydanticCustomError(
            "no_content",
            "abstract has no letters or digits (only symbols, emoji or invisible "
            "characters); send the paper's abstract text",
        )
    return value


# The abstract's length is checked by its validator (whose messages say what to fix) and documented in the spec.
Abstract = Annotated[
    str,
    Field(
        description=f"The paper's abstract (1 to {MAX_ABSTRACT_CHARS:,} characters, with at least one letter "
        f"or digit, in any script: the pattern's \\W is Unicode's, as in Python).",
        json_schema_extra={"minLength": 1, "maxLength": MAX_ABSTRACT_CHARS, "pattern": CONTENT_PATTERN},
    ),
    AfterValidator(_abstract_text),
]
Title = Annotated[
    str | None,
    Field(
        max_length=MAX_TITLE_CHARS, description="The paper's title (optional; used only by models trained with titles)."
    ),
]


def _whole_number(value):
    """1.0 is the integer 1 (JSON Schema's integer, which the OpenAPI 3.1 spec promises); 2.5, "3" and true stay
    refused by the strict int after it."""
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 2**53 else value


WholeNumber = BeforeValidator(_whole_number)
TopK = Annotated[  # (the validator after the Field: the spec then says minimum/maximum, not pydantic's ge/le)
    int,
    Field(
        ge=1,
        le=MAX_TOP_K,
        description="How many ranked tracks to return: 1 to the number of labels (see GET /metadata).",
    ),
    WholeNumber,
]

_REQUEST = ConfigDict(strict=True, extra="forbid")

Taxonomy = Annotated[
    str | None,
    Field(
        max_length=200,
        description=(
            'The taxonomy to answer in, e.g. "ICML 2025" (its name or one of its sources\', any letter case; '
            "GET /metadata lists them). Default: the model's default taxonomy."
        ),
    ),
]


class PredictRequest(BaseModel):
    """Body of ``POST /predict``."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={"example": {"abstract": EXAMPLE_ABSTRACT, "title": None, "top_k": 3}},
    )

    abstract: Abstract
    title: Title = None
    top_k: TopK = DEFAULT_TOP_K
    taxonomy: Taxonomy = None


class Paper(BaseModel):
    """One paper of a ``/predict_batch`` request."""

    model_config = _REQUEST

    abstract: Abstract
    title: Title = None


class PredictBatchRequest(BaseModel):
    """Body of ``POST /predict_batch``."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "example": {
                "papers": [
                    {"abstract": EXAMPLE_ABSTRACT, "title": None},
                    {
                        "abstract": "We prove convergence rates for stochastic gradient descent on non-convex "
                        "objectives under a Polyak-Lojasiewicz condition.",
                        "title": "SGD under the PL condition",
                    },
                ],
                "top_k": 3,
            }
        },
    )

    papers: Annotated[
        list[Paper],
        Field(
            min_length=1, max_length=MAX_BATCH, description=f"1 to {MAX_BATCH:,} papers, answered in the same order."
        ),
    ]
    top_k: TopK = DEFAULT_TOP_K
    taxonomy: Taxonomy = None


class BatchEnvelope(PredictBatchRequest):
    """``/predict_batch``'s (and ``/drift``'s) body as it is read: each paper is then validated on its own, so one
    bad paper gets one error in its place (the spec documents :class:`PredictBatchRequest`)."""

    papers: Annotated[list[Any], Field(min_length=1, max_length=MAX_BATCH)]  # type: ignore[assignment]


# --------------------------------------------------------------------------- responses


class ModelInfo(BaseModel):
    name: str
    version: str
    run_id: str


class PaperResult(Answer):  # the answer schema (models/answer.py) as the service's result for one paper
    pass


class PredictResponse(PaperResult):
    model: ModelInfo


class ErrorResponse(BaseModel):
    error: str
    detail: list[dict] = Field(default_factory=list)


class PaperErrorDetail(ErrorResponse):
    index: int = Field(description="The paper's position in the request's papers (from 0).")


class PaperError(BaseModel):
    """The result of a paper that failed validation: why, in the shape of a 400 answer, with its position."""

    error: PaperErrorDetail


class PredictBatchResponse(BaseModel):
    results: list[PaperResult | PaperError] = Field(
        description="One result per paper, in request order: its answer, or for a paper that failed validation "
        "an `error` (the shape of a 400 answer, with the paper's `index`). The status is 200 when any paper was "
        "answered, 400 when none was."
    )
    model: ModelInfo


class TaxonomyInfo(BaseModel):
    sources: list[str] = Field(description="The training sources whose names it is (also accepted as its name).")
    n_labels: int
    labels: list[str]
    areas: list[str]
    confidence: dict[str, float] | None = None


class MetadataResponse(BaseModel):
    model: ModelInfo
    bento_model: str = Field(description="The tag of the model in the BentoML store.")
    alias: str | None = Field(None, description="The registry alias the model was imported from.")
    model_uri: str | None = None
    candidate: str | None = None
    family: str | None = None
    data_digest: str | None = Field(None, description="Digest of the training data (abstract, label) pairs.")
    use_title: bool
    n_labels: int
    labels: list[str]
    areas: list[str]
    hierarchy: dict[str, list[str]] = Field(description="Area -> its labels.")
    metrics: dict[str, float] = Field(description="The champion's cross-validated evaluation metrics.")
    confidence: dict[str, float] | None = Field(
        None,
        description=(
            "How `confident` and `prediction_set` are decided (null for a model trained without them): "
            "`top1_threshold` (confident <=> top-1 probability >= it), `target_precision` (the top-1 precision it "
            "was chosen for, on held-out papers) and `coverage` (the share of papers whose prediction set should "
            "hold their true track)."
        ),
    )
    limits: dict[str, int] = Field(description="Request limits enforced by the service.")
    default_taxonomy: str | None = Field(
        None, description="The taxonomy answers are named in when a request does not ask for one."
    )
    taxonomies: dict[str, TaxonomyInfo] = Field(
        default_factory=dict,
        description="Every taxonomy the model answers in (a request's `taxonomy`), with its labels and calibration.",
    )


LIMITS = {"max_abstract_chars": MAX_ABSTRACT_CHARS, "max_title_chars": MAX_TITLE_CHARS, "max_batch": MAX_BATCH}


def model_info(stored, predictor) -> ModelInfo:
    """The served model's name, version and run (``stored``: the bentoml.Model it was loaded from)."""
    meta = dict(stored.info.metadata or {})
    return ModelInfo(
        name=str(meta.get("registered_model", settings.MODEL_NAME)),
        version=str(meta.get("version", "unknown")),
        run_id=str(meta.get("run_id") or predictor.card.run_id),
    )


def metadata(stored, predictor, model: ModelInfo) -> MetadataResponse:
    """``GET /metadata``'s answer."""
    meta = dict(stored.info.metadata or {})
    card, space = predictor.card, predictor.space
    metrics = card.metrics or meta.get("metrics") or {}
    return MetadataResponse(
        model=model,
        bento_model=str(stored.tag),
        alias=meta.get("alias"),
        model_uri=meta.get("model_uri"),
        candidate=card.candidate or meta.get("candidate"),
        family=card.family or None,
        data_digest=card.data_digest or meta.get("data_digest"),
        use_title=predictor.use_title,
        n_labels=space.n_labels,
        labels=list(space.labels),
        areas=list(space.areas),
        hierarchy=space.hierarchy(),
        metrics={k: float(v) for k, v in metrics.items()},
        limits=LIMITS,
        confidence=_confidence(predictor.confidence),
        default_taxonomy=predictor.taxonomy or None,
        taxonomies={
            h.taxonomy: TaxonomyInfo(
                sources=list(h.sources),
                n_labels=h.space.n_labels,
                labels=list(h.space.labels),
                areas=list(h.space.areas),
                confidence=_confidence(h.confidence),
            )
            for h in predictor.taxonomies
            if h.taxonomy
        },
    )


def _confidence(confidence) -> dict[str, float] | None:
    """What GET /metadata says about the confident flag and the prediction sets (the page explains "unsure")."""
    if confidence is None:
        return None
    return {
        "top1_threshold": float(confidence.top1_threshold),
        "target_precision": float(confidence.target_precision),
        "coverage": float(confidence.coverage),
    }
