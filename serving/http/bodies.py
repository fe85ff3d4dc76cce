"""The JSON body of a request to the service's endpoints: read (:func:`read_json_body`: Content-Type, size) and
validated (:func:`validated`: its pydantic model), or the 4xx saying what to fix."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request

from papertrack.serving.http.error_answers import BadRequest, ClientGone, errors_of, explain, invalid_request
from papertrack.serving.http.schemas import Paper

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest request body accepted (bytes): enough for ``MAX_BATCH`` long abstracts."""
M = TypeVar("M", bound=BaseModel)


async def read_json_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body: JSON (else 415), at most ``limit`` bytes (else 413, before reading it when the
    Content-Length says so), ``{}`` when empty."""
    content_type = request.headers.get("content-type")
    media_type = content_type.split(";", 1)[0].strip().lower() if content_type is not None else None
    if media_type != "application/json":
        what = f"unsupported Content-Type {content_type!r}" if content_type is not None else "no Content-Type"
        raise BadRequest(f"{what}: send the body as JSON with the header 'Content-Type: application/json'", status=415)
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isascii() or not length.isdigit():
            raise BadRequest("invalid Content-Length header")
        if int(length) > limit:
            raise BadRequest(
                f"request body is {int(length):,} bytes; the limit is {limit:,} bytes. "
                f"Send fewer papers per request (or use `papertrack label` for dumps).",
                status=413,
            )
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise BadRequest(
                    f"request body exceeds the limit of {limit:,} bytes. Send fewer papers per request.", status=413
                )
    except ClientDisconnect:
        raise ClientGone() from None  # one line in the log (error_answers.install)
    return bytes(body) or b"{}"


def validated(model: type[M], body: bytes) -> M:
    """``body`` (JSON bytes) as a ``model``, or the 400 saying what to fix."""
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise invalid_request(exc, body, list(model.model_fields)) from None


def validated_papers(papers: list[Any]) -> tuple[list[tuple[int, Paper]], list[dict]]:
    """Each paper of a batch validated on its own: (the valid ones with their index, the results of the others:
    ``{"error": {"error": one line, "detail": [...], "index": i}}``, a 400 answer's shape)."""
    good, failed = [], []
    for i, paper in enumerate(papers):
        try:
            good.append((i, Paper.model_validate(paper)))
        except ValidationError as exc:
            detail = errors_of(exc, list(Paper.model_fields), ("papers", i))
            failed.append({"error": {"error": explain(detail), "detail": detail, "index": i}})
    return good, failed
