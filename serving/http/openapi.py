"""The service's OpenAPI spec (``GET /docs.json``): FastAPI's own spec of the service's app (OpenAPI 3.1), built
from the routes' pydantic models, with what only the served model knows.

The JSON endpoints read their body themselves (its size and Content-Type are checked before it is parsed), so each
route names its body model (:func:`json_body`, FastAPI's ``openapi_extra``) and :func:`spec` adds those models'
schemas. What the model knows is set once it is loaded (:func:`served`): ``top_k``'s maximum (the asked
taxonomy's number of labels, the bound enforced) and the taxonomy names it answers to. FastAPI's default 422
answer is left out: the service answers invalid requests with a 400 in its error shape (:data:`ERRORS`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from papertrack import __version__

REF = "#/components/schemas/{model}"
DESCRIPTION = (
    'Classify ML paper abstracts into conference tracks ("Area · Subarea"). The page for people is at `/`; '
    'the served model (version, labels, metrics) at `GET /metadata`. Errors are JSON: `{"error": one line saying '
    'what to fix, "detail": [...]}`.'
)
ERRORS = {
    "400": "Invalid request: the body is not valid JSON or a field is missing, mistyped or out of range.",
    "403": "Cross-origin browser request (an Origin header from another site).",
    "413": "Request body too large.",
    "415": "Content-Type missing or not application/json.",
    "421": "Host header not served (DNS rebinding protection; see PAPERTRACK_ALLOWED_HOSTS).",
}
_bodies: list[type[BaseModel]] = []  # the request body models of the routes
_served: dict[str, Any] = {}  # what the served model knows: n_labels, taxonomies
_built: dict[tuple, dict] = {}


def error_responses(*only: str, **extra: str) -> dict:
    """The 4xx answers of a route for FastAPI's ``responses=``: ``only`` those of :data:`ERRORS` (default: all),
    plus ``extra`` (status -> description)."""
    from papertrack.serving.http.schemas import ErrorResponse

    chosen = {status: ERRORS[status] for status in (only or ERRORS)} | extra
    return {status: {"model": ErrorResponse, "description": text} for status, text in chosen.items()}


def json_body(model: type[BaseModel]) -> dict:
    """FastAPI's ``openapi_extra`` of a route whose body (read by the route itself) is a ``model`` as JSON."""
    _bodies.append(model)
    schema = {"$ref": REF.format(model=model.__name__)}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def served(labels: dict[str | None, int]) -> None:
    """What the loaded model knows, for the spec: the number of labels of each taxonomy name it answers to (None:
    its default taxonomy, when a request names none)."""
    _served["labels"] = dict(labels)


def spec(app) -> dict:
    """The spec of ``app`` (built once per worker and model)."""
    labels = _served.get("labels") or {}
    key = (id(app), tuple(labels.items()))
    if key not in _built:
        _built[key] = _build(app, labels)
    return _built[key]


def _top_k_bounds(schema: dict, labels: dict[str | None, int]) -> None:
    """``top_k``'s maximum in ``schema`` (a request body with ``top_k`` and ``taxonomy``): the number of labels of
    the asked taxonomy (JSON Schema ``if``/``then`` per group of names; no taxonomy or null: the default one), under
    the field's own maximum; ``taxonomy``: the names the model answers to."""
    properties = schema["properties"]
    cap = properties["top_k"].get("maximum", max(labels.values()))
    properties["top_k"]["maximum"] = min(cap, max(labels.values()))
    properties["taxonomy"] = {**properties["taxonomy"], "enum": [*(n for n in labels if n is not None), None]}
    rules = []
    for n in sorted(set(labels.values())):
        names = [name for name, count in labels.items() if count == n and name is not None]
        when: list[dict] = [{"properties": {"taxonomy": {"enum": names}}, "required": ["taxonomy"]}] if names else []
        if labels.get(None) == n:
            when += [{"not": {"required": ["taxonomy"]}}, {"properties": {"taxonomy": {"const": None}}}]
        rules.append({"if": {"anyOf": when}, "then": {"properties": {"top_k": {"maximum": min(cap, n)}}}})
    schema["allOf"] = rules


def _build(app, labels: dict[str | None, int]) -> dict:
    from fastapi.openapi.utils import get_openapi

    doc = get_openapi(title="papertrack", version=__version__, description=DESCRIPTION, routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    _, defs = models_json_schema([(model, "validation") for model in _bodies], ref_template=REF)
    schemas.update(defs.get("$defs", {}))
    for name in ("HTTPValidationError", "ValidationError"):  # FastAPI's 422, which the service never answers
        schemas.pop(name, None)
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    for model in _bodies:
        properties = schemas[model.__name__].get("properties", {})
        if labels and "top_k" in properties:
            _top_k_bounds(schemas[model.__name__], labels)
        elif labels and "taxonomy" in properties:
            properties["taxonomy"] = {**properties["taxonomy"], "enum": [*(n for n in labels if n is not None), None]}
    return doc
