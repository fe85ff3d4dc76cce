"""An ASGI middleware in front of the prediction endpoints: bad requests get a 4xx that says what to fix.

BentoML already answers a body that fails validation (invalid JSON, missing or mistyped fields,
limits) with a 400 listing pydantic's errors. This middleware adds what it cannot do itself:

* a Content-Type other than JSON, or none -> 415 (BentoML would silently parse any unknown type as
  JSON, and try to read forms as multipart; a POST without a Content-Type is what a hostile page can
  send cross-origin without asking the browser first);
* a body larger than ``MAX_BODY_BYTES`` -> 413, before it is read;
* the 400 message: "1 validation error for PredictRequest" becomes e.g.
  "invalid request: papers[3].abstract: Field required" (the ``detail`` list is kept); a body that
  is not clean UTF-8 JSON (a BOM, a byte that is not UTF-8, a lone surrogate escape) gets a message
  saying what to fix.

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


def request_headers(scope, *names: bytes) -> list[str | None]:
    """The values of the named request headers (latin-1; the last one when repeated), None when absent."""
    found: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        if name in names:
            found[name] = value.decode("latin-1")
    return [found.get(name) for name in names]


class RequestGuard:
    def __init__(
        self, app, paths: Iterable[str] = ("/predict", "/predict_batch"), max_body_bytes: int = MAX_BODY_BYTES
    ):
        self.app = app
        self.paths = frozenset(paths)
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] not in self.paths or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        content_type, length = request_headers(scope, b"content-type", b"content-length")
        media_type = content_type.split(";", 1)[0].strip().lower() if content_type is not None else None
        if media_type not in JSON_MEDIA_TYPES:
            what = f"unsupported Content-Type {content_type!r}" if content_type is not None else "no Content-Type"
            message = f"{what}: send the body as JSON with the header 'Content-Type: application/json'"
            return await respond(send, 415, error_body(message))
        if length is not None:
            try:
                size = int(length.encode("latin-1"))  # the raw header bytes, as the server received them
            except ValueError:
                return await respond(send, 400, error_body("invalid Content-Length header"))
            if size > self.max_body_bytes:
                return await respond(
                    send,
                    413,
                    error_body(
                        f"request body is {size:,} bytes; the limit is {self.max_body_bytes:,} bytes. "
                        f"Send fewer papers per request (or use `papertrack label` for dumps)."
                    ),
                )
        else:
            receive = await self._buffered(receive, send)
            if receive is None:
                return None
        body: list[bytes] = []  # references to the body's chunks, to explain an encoding problem in a 400

        async def keeping():
            message = await receive()
            if message["type"] == "http.request":
                body.append(message.get("body", b""))
            return message

        await self.app(scope, keeping, _explaining_400(send, body))

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
                await respond(
                    send,
                    413,
                    error_body(
                        f"request body exceeds the limit of {self.max_body_bytes:,} bytes. "
                        "Send fewer papers per request."
                    ),
                )
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


def encoding_problem(body: bytes) -> str | None:
    """What is wrong with the bytes of a JSON body, when it is their encoding (else None)."""
    if body.startswith(b"\xef\xbb\xbf"):
        return "the body starts with a UTF-8 byte order mark (BOM, bytes EF BB BF); send the JSON without it"
    if body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "the body is UTF-16; send it as UTF-8"
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"byte 0x{body[exc.start]:02x} at offset {exc.start} is not UTF-8; encode the body as UTF-8 "
            f"(e.g. json.dumps(...).encode('utf-8'))"
        )
    found = lone_surrogate(text)
    if found:
        return (
            f"{found[0]} at offset {found[1]} is a lone UTF-16 surrogate escape, which is not a "
            f"character; remove it or send the full surrogate pair (or the character itself)"
        )
    return None


def lone_surrogate(text: str) -> tuple[str, int] | None:
    """The first lone UTF-16 surrogate escape in JSON text (``\\udc00``) and its offset, else None."""
    match = _LONE_SURROGATE.search(text)
    return (match.group(0), match.start()) if match else None


# a \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one, or a \uDC00-\uDFFF one not preceded by one
_LONE_SURROGATE = re.compile(
    r"(?<!\\)\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<![dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _explaining_400(send, request_body: list[bytes] | None = None):
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
        await _send_rewritten(send, held["start"], b"".join(held["body"]), b"".join(request_body or ()))
        return None

    return wrapped


async def _send_rewritten(send, start: dict, body: bytes, request_body: bytes = b"") -> None:
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    problem = encoding_problem(request_body)
    if problem is not None:
        detail = data.get("detail") if isinstance(data, dict) and isinstance(data.get("detail"), list) else []
        body = error_body(
            f"invalid request: {problem}", detail or [{"type": "body_encoding", "loc": [], "msg": problem}]
        )
    elif (
        isinstance(data, dict)
        and isinstance(data.get("detail"), list)
        and _VALIDATION_TITLE.match(str(data.get("error", "")))
    ):
        body = error_body(explain(data["detail"]), data["detail"])
    elif isinstance(data, dict) and not isinstance(data.get("detail", []), list):
        body = error_body(
            str(data.get("error") or "invalid request"),
            [{"type": "invalid", "loc": [], "msg": str(data.get("detail"))}],
        )
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def respond(send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
