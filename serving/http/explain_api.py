"""``POST /explain``: request and response models (pydantic, strict like the other endpoints).

The answer itself comes from :func:`papertrack.models.explain.explain` — the same explanation any script
gets from the artifact.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from pydantic import BaseModel, Field

from papertrack.models.explain import DEFAULT_TERMS, explain
from papertrack.models.neighbors import DEFAULT_NEIGHBORS
from papertrack.serving.http.schemas import ModelInfo, PaperResult, PredictRequest

MAX_NEIGHBORS = 50
MAX_TERMS = 50


class ExplainRequest(PredictRequest):
    """Body of ``POST /explain``: a ``/predict`` body and how many terms per track."""

    terms: Annotated[int, Field(ge=1, le=MAX_TERMS, description="Terms per track (most weight first).")] = DEFAULT_TERMS
    neighbors: Annotated[
        int, Field(ge=0, le=MAX_NEIGHBORS, description="How many similar labeled training abstracts to return.")
    ] = DEFAULT_NEIGHBORS


class Term(BaseModel):
    term: str
    weight: float = Field(
        description="How much the term pushed the track up: coefficient × tf-idf for linear "
        "models, the probability drop when the word is removed for occlusion."
    )
    spans: list[list[int]] = Field(description="[start, end) character offsets of the term in the abstract.")


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


async def explain_async(predictor, executor, *args, **kwargs):
    """:func:`explain` in the event loop when ``executor`` is None, else in it (the service decides by the
    measured cost, as for ``/predict``)."""
    if executor is None:
        return explain(predictor, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(executor, lambda: explain(predictor, *args, **kwargs))
