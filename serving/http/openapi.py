"""The service's OpenAPI spec, corrected to say what the service really does (``GET /docs.json``).

BentoML generates the spec from the pydantic models but: documents 400 bodies with ``detail`` as a
string (it is a list of {type, loc, msg}), drops ``null`` from optional request fields (``title: null``
is accepted), writes optional response fields as OpenAPI 3.1 ``anyOf [.., {type: null}]`` in a 3.0
spec, leaves the request body optional, cannot know ``top_k``'s real maximum (the served model's
number of labels), describes the service with BentoML's README (badge images from five other sites, which
the OpenAPI page would load) and omits 413 (body too large), 415 (not JSON), 421 (Host not served) and
403 (cross-origin), and keys its error responses by int (``400``), which ``json.dumps`` writes as a second
``"400"`` key next to the corrected one (Swagger UI: "duplicated mapping key"). :func:`corrected` fixes
each; :class:`~.middleware.SpecRoute` answers ``/docs.json`` with it.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

from papertrack import __version__
from papertrack.features.ingest import FORMATS

CONTENT_PATTERN = r"[^\W_]"  # at least one letter or digit (what features.ingest.has_content checks), in Python


@functools.cache
def content_pattern() -> str:
    """CONTENT_PATTERN as the spec writes it: the same characters spelled as explicit ranges of the Basic
    Multilingual Plane, because a JSON Schema pattern is an ECMA-262 regular expression, in which ``\\W`` is ASCII
    only (Python's is Unicode: "º" is a letter to the service but not to an ECMA ``[^\\W_]``)."""
    letter = re.compile(CONTENT_PATTERN)
    ranges: list[tuple[int, int]] = []
    for cp in range(0x10000):
        if 0xD800 <= cp <= 0xDFFF or not letter.match(chr(cp)):
            continue
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    spell = "\\u{:04x}".format
    return "[" + "".join(spell(a) if a == b else f"{spell(a)}-{spell(b)}" for a, b in ranges) + "]"


ERROR_SCHEMA = {
    "type": "object",
    "title": "ErrorResponse",
    "required": ["error", "detail"],
    "properties": {
        "error": {"type": "string", "description": "What is wrong and what to fix, in one line."},
        "detail": {
            "type": "array",
            "description": "One entry per problem (pydantic's errors for a 400).",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string"},
                    "loc": {"type": "array", "items": {}},
                    "msg": {"type": "string"},
                },
            },
        },
    },
}
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


# answers particular to one endpoint
PATH_ERRORS = {"/drift": {"409": "The served model carries no training profile (trained before drift reports)."}}


def corrected(spec: dict[str, Any], n_labels: int | None, taxonomies: list[str] | None = None) -> dict[str, Any]:
    """A copy of BentoML's spec with the fixes listed in the module doc."""
    spec = copy.deepcopy(spec)
    spec["info"] = {"title": "papertrack", "version": __version__, "description": DESCRIPTION}
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorResponse"] = ERROR_SCHEMA
    for name in ("InvalidArgument", "NotFound", "InternalServerError"):
        if name in schemas:
            schemas[name] = ERROR_SCHEMA
    _nullable_anyof(spec)
    if "Paper" in schemas:  # the items of /predict_batch's papers (a $ref)
        _fix_request_schema(schemas["Paper"], n_labels, taxonomies)
    for path, operations in spec.get("paths", {}).items():
        for method, operation in operations.items():
            # BentoML keys its error responses by int (400, 404, 500): json.dumps writes them as "400" next to
            # the "400" added here, a duplicated key Swagger UI refuses to render. Keys are strings, in order.
            responses = operation["responses"] = {
                str(status): answer for status, answer in operation.get("responses", {}).items()
            }
            if method == "post" and "requestBody" not in operation:  # a raw body (POST /parse_dump: a file)
                operation["requestBody"] = {
                    "required": True,
                    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
                }
                for parameter in operation.get("parameters", []):
                    if parameter.get("name") == "format":
                        parameter["schema"] = {"type": "string", "enum": list(FORMATS), "nullable": True}
                for status, description in {
                    **ERRORS,
                    "400": "The file cannot be read (the message names the line).",
                }.items():
                    responses[status] = _error_response(description)
            elif method == "post" and "requestBody" in operation:
                operation["requestBody"]["required"] = True
                for media in operation["requestBody"].get("content", {}).values():
                    _fix_request_schema(media.get("schema", {}), n_labels, taxonomies)
                for status, description in {**ERRORS, **PATH_ERRORS.get(path, {})}.items():
                    responses[status] = _error_response(description)
            elif method == "get":
                for status in ("403", "421"):
                    responses[status] = _error_response(ERRORS[status])
    return spec


def _error_response(description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
    }


def _fix_request_schema(schema: dict, n_labels: int | None, taxonomies: list[str] | None = None) -> None:
    properties = schema.get("properties", {})
    if "abstract" in properties:
        properties["abstract"]["pattern"] = content_pattern()
    for name in ("title", "taxonomy"):
        field = properties.get(name)
        if field is not None and field.get("default", "") is None:
            field["nullable"] = True
    if taxonomies and "taxonomy" in properties:  # the names this model answers to (its taxonomies and sources)
        properties["taxonomy"]["enum"] = [*taxonomies, None]
    if n_labels is not None and "top_k" in properties:  # the model's labels, or less where the request says so
        properties["top_k"]["maximum"] = min(n_labels, properties["top_k"].get("maximum", n_labels))
    papers = properties.get("papers", {}).get("items")
    if isinstance(papers, dict) and "properties" in papers:
        _fix_request_schema(papers, n_labels, taxonomies)


def _nullable_anyof(node: Any) -> None:
    """``anyOf: [X, {type: null}]`` (3.1 style) -> X with ``nullable: true`` (3.0), everywhere."""
    if isinstance(node, dict):
        options = node.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options:
            rest = [o for o in options if o != {"type": "null"}]
            del node["anyOf"]
            if len(rest) == 1:
                node.update(rest[0])
            else:
                node["anyOf"] = rest
            node["nullable"] = True
        for value in node.values():
            _nullable_anyof(value)
    elif isinstance(node, list):
        for value in node:
            _nullable_anyof(value)
