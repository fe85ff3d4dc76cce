"""What every answer of the service looks like, whichever layer wrote it: JSON errors for unknown paths and
wrong methods, and browser-safety headers on the two HTML pages.

* 404 and 405 come from Starlette (BentoML's routes: ``text/plain`` "Not Found") or FastAPI (the mounted
  app: ``{"detail": "Not Found"}``); both become the service's error shape ``{"error", "detail": []}``
  (``Allow`` is kept). A 404/405 already in that shape passes through.
* ``GET /`` (the page) and ``GET /docs`` (the OpenAPI page) get ``Content-Security-Policy`` (everything from
  this origin only: no inline script, no other site), ``X-Frame-Options: DENY`` and
  ``X-Content-Type-Options: nosniff``.

Other answers pass through untouched.
"""

from __future__ import annotations

import json

from papertrack.serving.http.guard import error_body

PAGE_PATHS = frozenset({"/", "/docs"})
# The page and Swagger UI load their scripts and styles from this origin; Swagger UI's CSS draws its icons
# with data: images. Scripts set styles through the DOM (allowed), never as inline <style> or style="".
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
PAGE_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
]
_REPLACED = frozenset({b"content-length", b"content-type"})


def _message(status: int, method: str, path: str, allow: str | None) -> str:
    shown = path if len(path) <= 200 else path[:200] + "…"
    if status == 404:
        return f"not found: {shown} (the endpoints are listed at /docs)"
    return (
        f"method {method} is not allowed on {shown}"
        + (f"; use {allow}" if allow else "")
        + " (the endpoints are listed at /docs)"
    )


def _is_error_shape(body: bytes) -> bool:
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get("error"), str) and isinstance(data.get("detail"), list)


class ResponsePolicy:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        page = scope["path"] in PAGE_PATHS
        held: dict = {}

        async def wrapped(message):
            if message["type"] == "http.response.start":
                if message["status"] in (404, 405):
                    held["start"], held["body"] = message, []
                    return None
                if page:
                    message = {**message, "headers": [*message.get("headers", []), *PAGE_HEADERS]}
                return await send(message)
            if "start" not in held or message["type"] != "http.response.body":
                return await send(message)
            held["body"].append(message.get("body", b""))
            if message.get("more_body", False):
                return None
            start, body = held.pop("start"), b"".join(held.pop("body"))
            headers = start.get("headers", [])
            if not _is_error_shape(body):
                allow = next((v.decode("latin-1") for k, v in headers if k.lower() == b"allow"), None)
                body = error_body(_message(start["status"], scope["method"], scope["path"], allow))
                headers = [(k, v) for k, v in headers if k.lower() not in _REPLACED]
                headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return None

        return await self.app(scope, receive, wrapped)
