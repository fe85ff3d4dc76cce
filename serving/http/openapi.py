"""The service's OpenAPI spec (``GET /docs.json``): FastAPI's own spec of the service's app (OpenAPI 3.1), built
from the routes' pydantic models, with what only the served model knows.

The JSON endpoints read their body themselves (its size and Content-Type are checked before it is parsed), so each
route names its body model (:func:`json_body`, FastAPI's ``openapi_extra``) and :func:`spec` adds those models'
schemas. What the model knows is set once it is loaded (:func:`served`): ``top_k``'s maximum (its number of
labels, the bound enforced for the default taxonomy) and the taxonomy names it answers to. FastAPI's default 422
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


def served(n_labels: int, taxonomies: list[str]) -> None:
    """What the loaded model knows, for the spec: its number of labels and the taxonomy names it answers to."""
    _served.update(n_labels=n_labels, taxonomies=taxonomies)


def spec(app) -> dict:
    """The spec of ``app`` (built once per worker and model)."""
    key = (id(app), _served.get("n_labels"), tuple(_served.get("taxonomies") or ()))
    if key not in _built:
        _built[key] = _build(app, _served.get("n_labels"), _served.get("taxonomies"))
    return _built[key]


def _build(app, n_labels: int | None, taxonomies: list[str] | None) -> dict:
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
        if n_labels is not None and "top_k" in properties:  # the model's labels, or less where the request says so
            properties["top_k"]["maximum"] = min(n_labels, properties["top_k"].get("maximum", n_labels))
        if taxonomies and "taxonomy" in properties:  # the names this model answers to (its taxonomies and sources)
            properties["taxonomy"] = {**properties["taxonomy"], "enum": [*taxonomies, None]}
    return doc
