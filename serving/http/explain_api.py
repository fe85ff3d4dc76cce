"""``POST /explain``: request and response models (pydantic, strict like the other endpoints).

The answer itself comes from :func:`papertrack.models.explain.explain` — the same explanation any script
gets from the artifact.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from papertrack.models.answer import DEFAULT_NEIGHBORS, DEFAULT_TERMS
from papertrack.serving.http.error_answers import BadRequest
from papertrack.serving.http.schemas import ModelInfo, PaperResult, PredictRequest, WholeNumber

MAX_NEIGHBORS = 50
MAX_TERMS = 50
MAX_EXPLAINED_TERMS = 1_000
"""Most terms in one answer (``top_k`` × ``terms``): top_k 85 × terms 50 of a 20,000-character abstract answered
399 kB and took 107 ms (hostile input, round three)."""
MAX_SPANS = 100
"""Most spans returned per term (its first occurrences): a frequent word of a long abstract has hundreds."""


def explain(*args, **kwargs):
    """:func:`papertrack.models.explain.explain`, imported at the first call: scikit-learn is not imported with
    the service's module (`bentoml serve`'s own process imports it, and explains nothing)."""
    from papertrack.models.explain import explain as explained

    return explained(*args, **kwargs)


MAX_EXPLAIN_TOP_K = MAX_EXPLAINED_TERMS // MAX_TERMS
"""Most tracks one explanation explains: with at most MAX_TERMS terms each, every request the schema allows stays
within MAX_EXPLAINED_TERMS (the product itself is checked too, and said in the 400)."""


class ExplainRequest(PredictRequest):
    """Body of ``POST /explain``: a ``/predict`` body and how many terms per track."""

    top_k: Annotated[
        int,
        Field(ge=1, le=MAX_EXPLAIN_TOP_K, description=f"How many ranked tracks to explain: 1 to {MAX_EXPLAIN_TOP_K}."),
        WholeNumber,
    ] = 3

    terms: Annotated[
        int, Field(ge=1, le=MAX_TERMS, description="Terms per track (most weight first)."), WholeNumber
    ] = DEFAULT_TERMS
    neighbors: Annotated[
        int,
        Field(ge=0, le=MAX_NEIGHBORS, description="How many similar labeled training abstracts to return."),
        WholeNumber,
    ] = DEFAULT_NEIGHBORS


class Term(BaseModel):
    term: str
    weight: float = Field(
        description="How much the term pushed the track up: coefficient × tf-idf for linear "
        "models, the probability drop when the word is removed for occlusion."
    )
    spans: list[list[int]] = Field(
        description=f"[start, end) character offsets of the term in the abstract (its first {MAX_SPANS})."
    )


class TrackExplanation(BaseModel):
    label: str
    terms: list[Term] = Field(description="The terms that pushed this track up, most weight first (up to `terms`).")


class Method(BaseModel):
    kind: str = Field(
        description="exact-linear (the model is linear on TF-IDF terms: exact shares of each track's "
        "score), linear-member (an ensemble: only its linear TF-IDF member is explained, "
        "not the other members, e.g. sentence embeddings) or occlusion (the probability "
        "drop when a word is removed)."
    )
    detail: str = Field(description="What was explained, in words (for linear-member: the member and its weight).")


class Neighbor(BaseModel):
    id: str
    title: str | None = None
    label: str
    similarity: float = Field(description="Cosine similarity of TF-IDF word vectors (0 to 1).")
    snippet: str = Field(description="The start of the neighbour's abstract.")


class ExplainResponse(PaperResult):
    method: Method
    explanations: list[TrackExplanation] = Field(description="One per returned track, in the same order.")
    neighbors: list[Neighbor]
    model: ModelInfo


def bounded(explanation: dict) -> dict:
    """``explanation`` with at most ``MAX_SPANS`` spans per term."""
    for track in explanation["explanations"]:
        for term in track["terms"]:
            if len(term["spans"]) > MAX_SPANS:
                term["spans"] = term["spans"][:MAX_SPANS]
    return explanation


def check_terms(top_k: int, terms: int) -> None:
    """The 400 for ``top_k × terms`` over ``MAX_EXPLAINED_TERMS``."""
    if top_k * terms <= MAX_EXPLAINED_TERMS:
        return
    message = (
        f"top_k × terms must be at most {MAX_EXPLAINED_TERMS:,}, got {top_k} × {terms} = {top_k * terms:,}: "
        f"ask for fewer tracks or fewer terms per track"
    )
    detail = [{"type": "less_than_equal", "loc": ["terms"], "msg": message}]
    raise BadRequest(f"invalid request: {message}", detail)
