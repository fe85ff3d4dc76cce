"""An ASGI middleware in front of the prediction endpoints: bad requests get a 4xx that says what to fix.

BentoML already answers a body that fails validation (invalid JSON, missing or mistyped fields,
limits) with a 400 listing pydantic's errors. This middleware adds what it cannot do itself:

* a Content-Type other than JSON -> 415 (BentoML would silently parse any unknown type as JSON,
  and try to read forms as multipart);
* a body larger than ``MAX_BODY_BYTES`` -> 413, before it is read;
* the 400 message: "1 validation error for PredictRequest" becomes e.g.
  "invalid request: papers[3].abstract: Field required" (the ``detail`` list is kept).

Responses other than 400 pass through untouched, so the hot path costs one header scan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest request body accepted (bytes): enough for ``MAX_BATCH`` long abstracts."""
JSON_MEDIA_TYPES = frozenset({"application/json"})
_VALIDATION_TITLE = re.compile(r"^\d+ validation errors? for ")


def error_body(status_message: str, detail: list | None = None) -> bytes:
    return json.dumps({"error": status_message, "detail": detail or []}).encode("utf-8")


def location(loc: Iterable) -> str:
    """("papers", 3, "abstract") -> "papers[3].abstract"."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def explain(detail: list[dict]) -> str:
    """One line naming every invalid field and what is wrong with it."""
    parts = []
    for error in detail[:10]:
        where = location(error.get("loc") or ())
        parts.append(f"{where}: {error.get('msg')}" if where else str(error.get("msg")))
    more = f" (and {len(detail) - 10} more)" if len(detail) > 10 else ""
    return "invalid request: " + "; ".join(parts) + more


class RequestGuard:
    def __init__(self, app, paths: Iterable[str] = ("/predict", "/predict_batch"),
                 max_body_bytes: int = MAX_BODY_BYTES):
        self.app = app
        self.paths = frozenset(paths)
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] not in self.paths or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        content_type = length = None
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value.decode("latin-1")
            elif name == b"content-length":
                length = value
        if content_type is not None:
            media_type = content_type.split(";", 1)[0].strip().lower()
            if media_type not in JSON_MEDIA_TYPES:
                message = (f"unsupported Content-Type {content_type!r}: send the body as JSON with the header "
                           f"'Content-Type: application/json'")
                return await _respond(send, 415, error_body(message))
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                return await _respond(send, 400, error_body("invalid Content-Length header"))
            if size > self.max_body_bytes:
                return await _respond(send, 413, error_body(
                    f"request body is {size:,} bytes; the limit is {self.max_body_bytes:,} bytes. "
                    f"Send fewer papers per request (or use `papertrack label` for dumps)."))
        else:
            receive = await self._buffered(receive, send)
            if receive is None:
                return None
        await self.app(scope, receive, _explaining_400(send))

    async def _buffered(self, receive, send):
        """Read a body without Content-Length (chunked) up to the limit; None after answering 413."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                chunks.append(message)  # a disconnect: let the app see it
                break
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                await _respond(send, 413, error_body(
                    f"request body exceeds the limit of {self.max_body_bytes:,} bytes. Send fewer papers per request."))
                return None
            chunks.append(message)
            if not message.get("more_body", False):
                break
        replay = iter(chunks)

        async def replayed():
            for message in replay:
                return message
            return await receive()

        return replayed


def _explaining_400(send):
    held: dict = {}

    async def wrapped(message):
        if message["type"] == "http.response.start" and message["status"] == 400:
            held["start"], held["body"] = message, []
            return None
        if "start" not in held or message["type"] != "http.response.body":
            return await send(message)
        held["body"].append(message.get("body", b""))
        if message.get("more_body", False):
            return None
        await _send_rewritten(send, held["start"], b"".join(held["body"]))
        return None

    return wrapped


async def _send_rewritten(send, start: dict, body: bytes) -> None:
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("detail"), list) and \
            _VALIDATION_TITLE.match(str(data.get("error", ""))):
        body = error_body(explain(data["detail"]), data["detail"])
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _respond(send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
