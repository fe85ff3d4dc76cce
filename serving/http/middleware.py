"""The service's ASGI middlewares (pure ASGI: no per-request Request objects or extra tasks), outermost first:

* :class:`ConnectionRecycler` — spreads keep-alive clients over the workers;
* :class:`ResponsePolicy` — JSON 404/405 answers; CSP and frame headers on the two HTML pages;
* :class:`OriginGuard` — allowed Host names (DNS rebinding) and same-origin browser calls only;
* :class:`SpecRoute` — ``GET /docs.json``: the corrected OpenAPI spec (:mod:`.openapi`);
* :class:`RequestGuard` — Content-Type, body size and 400 messages of the POST endpoints;

plus :func:`install_bounded_metrics` (BentoML's metrics middleware with bounded path labels). The error
answers themselves are written by :mod:`.error_answers`: a request that succeeds runs only this module.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from papertrack import settings
from papertrack.serving.http import error_answers
from papertrack.serving.http.error_answers import error_body, respond

# --------------------------------------------------------------------------- ConnectionRecycler
RECONNECT_EVERY = 64
MAX_AGE_SECONDS = 1.0
_MAX_TRACKED = 4096  # connections remembered at once (entries of closed connections are dropped in bulk)


class ConnectionRecycler:
    """A connection's ``every``-th request, or its first request after ``max_age`` seconds, is answered with
    ``Connection: close``, so the client reconnects and the kernel hands the new connection to whichever worker
    accepts it first — usually an idle one.

    Without it, a client that opens its keep-alive connections at once often has all of them accepted by one
    of the 2 workers, for as long as they live: throughput halved (1,658 -> 842 req/s) and p99 rose ~6x in 3
    of 6 runs. The age limit matters for a slow model (a few requests per second per connection).
    Reconnecting costs one TCP handshake on loopback.
    """

    def __init__(
        self,
        app,
        every: int = RECONNECT_EVERY,
        max_age: float = MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.app = app
        self.every, self.max_age, self.clock = every, max_age, clock
        self.served: dict[tuple, tuple[int, float]] = {}  # connection -> (requests, first request's time)

    async def __call__(self, scope, receive, send):
        client = scope.get("client") if scope["type"] == "http" else None
        if client is None:
            return await self.app(scope, receive, send)
        key = (client[0], client[1], scope.get("server") and scope["server"][1])
        now = self.clock()
        count, since = self.served.get(key, (0, now))
        count += 1
        if count < self.every and now - since < self.max_age:
            if len(self.served) >= _MAX_TRACKED:
                self.served.clear()
            self.served[key] = (count, since)
            return await self.app(scope, receive, send)
        self.served.pop(key, None)

        async def closing(message):
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        return await self.app(scope, receive, closing)


# --------------------------------------------------------------------------- ResponsePolicy
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


class ResponsePolicy:
    """What every answer looks like, whichever layer wrote it: a 404/405 from Starlette (``text/plain``) or
    FastAPI (``{"detail": ...}``) becomes the service's error shape (``Allow`` kept; one already in that shape
    passes through); ``GET /`` and ``GET /docs`` get ``Content-Security-Policy`` (this origin only: no inline
    script, no other site), ``X-Frame-Options: DENY`` and ``X-Content-Type-Options: nosniff``. Other answers
    pass through untouched."""

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
            if not error_answers.is_error_shape(body):
                allow = next((v.decode("latin-1") for k, v in headers if k.lower() == b"allow"), None)
                body = error_body(
                    error_answers.not_found_message(start["status"], scope["method"], scope["path"], allow)
                )
                headers = [(k, v) for k, v in headers if k.lower() not in _REPLACED]
                headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return None

        return await self.app(scope, receive, wrapped)


# --------------------------------------------------------------------------- OriginGuard
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
# RFC 9110 Host = uri-host [ ":" port ]; names and IPv4 addresses, or an IPv6 address in brackets
_HOST = re.compile(r"(?:[a-z0-9](?:[a-z0-9._-]*[a-z0-9.])?|\[[0-9a-f:.]+\])(?::[0-9]{0,5})?", re.IGNORECASE)


def request_headers(scope, *names: bytes) -> list[str | None]:
    """The values of the named request headers (latin-1; the last one when repeated), None when absent."""
    found: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        if name in names:
            found[name] = value.decode("latin-1")
    return [found.get(name) for name in names]


def replaying(messages: list, receive):
    """A receive that gives ``messages`` (already read from ``receive``) first, then what ``receive`` gives."""
    pending = iter(messages)

    async def replayed():
        for message in pending:
            return message
        return await receive()

    return replayed


def host_name(host: str) -> str:
    """``example.org:3000`` -> ``example.org``; ``[::1]:3000`` -> ``[::1]`` (lower case)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class OriginGuard:
    """Who may call the service. It binds the loopback interface by default, yet a web page the user opens
    could still make their browser call it: by a cross-origin ``fetch`` (its ``Origin`` names the other site)
    or by DNS rebinding (the other site's name resolves to 127.0.0.1, so ``Host`` carries that name). So:

    * ``Host`` must be a host name or address with an optional port (``name[:port]``, ``[v6]:port``) — else
      400 (``127.0.0.1:1@evil.com`` is no host: by URL rules it names ``evil.com``);
    * ``Host`` must name an allowed host: ``127.0.0.1``, ``localhost`` or ``[::1]`` (any port), plus the names
      in ``PAPERTRACK_ALLOWED_HOSTS`` (comma-separated; ``*`` allows any) — else 421;
    * a request with an ``Origin`` header (browsers send it on every POST and on cross-origin requests) must
      come from the page of this same service (``Origin`` host:port = ``Host``) — else 403. curl, the labeler
      and other programs send no ``Origin``.

    Not Starlette's ``TrustedHostMiddleware``: it answers an unknown and a malformed ``Host`` alike (400, plain
    text "Invalid host header", no allowed names), refuses a request without ``Host`` (HTTP/1.0 clients), checks
    nothing once ``*`` is allowed, and may redirect to ``www.``.
    """

    def __init__(self, app, allowed_hosts: Iterable[str] | None = None):
        self.app = app
        extra = settings.current().allowed_hosts if allowed_hosts is None else tuple(allowed_hosts)
        self.any_host = "*" in extra
        self.allowed = LOOPBACK_NAMES | {host_name(h) for h in extra if h != "*"}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        host, origin = request_headers(scope, b"host", b"origin")
        if host is not None and host.strip() and not _HOST.fullmatch(host.strip()):
            return await respond(
                send,
                400,
                error_body(f"invalid Host header {host[:200]!r}: expected a host name or address and an optional port"),
            )
        if not self.any_host and host is not None and host_name(host) not in self.allowed:
            return await respond(
                send,
                421,
                error_body(
                    f"Host {host!r} is not served here; allowed: {', '.join(sorted(self.allowed))} "
                    f"(add names with PAPERTRACK_ALLOWED_HOSTS)"
                ),
            )
        if origin is not None and not _same_origin(origin, host):
            return await respond(
                send,
                403,
                error_body(
                    f"cross-origin request from {origin!r} refused: only the service's own page may call it "
                    f"from a browser"
                ),
            )
        return await self.app(scope, receive, send)


def _same_origin(origin: str, host: str | None) -> bool:
    if host is None or origin.strip().lower() == "null":
        return False
    parts = urlsplit(origin.strip())
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.strip().lower()


# --------------------------------------------------------------------------- SpecRoute
SPEC_PATH = "/docs.json"


class SpecRoute:
    """Answers ``GET /docs.json`` with the corrected spec (:func:`.openapi.corrected`, built once per worker)."""

    def __init__(
        self,
        app,
        spec: Callable[[], dict],
        n_labels: Callable[[], int | None],
        taxonomies: Callable[[], list[str] | None] = lambda: None,
    ):
        self.app = app
        self.spec, self.n_labels, self.taxonomies = spec, n_labels, taxonomies
        self._body: bytes | None = None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != SPEC_PATH or scope["method"] not in ("GET", "HEAD"):
            return await self.app(scope, receive, send)
        if self._body is None:
            from papertrack.serving.http.openapi import corrected

            self._body = json.dumps(corrected(self.spec(), self.n_labels(), self.taxonomies())).encode("utf-8")
        await respond(send, 200, self._body)


# --------------------------------------------------------------------------- RequestGuard
MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest request body accepted (bytes): enough for ``MAX_BATCH`` long abstracts."""
JSON_MEDIA_TYPES = frozenset({"application/json"})


class RequestGuard:
    """Bad requests to the POST endpoints get a 4xx that says what to fix. BentoML already answers a body that
    fails validation with a 400 listing pydantic's errors; this adds what it cannot do itself:

    * a Content-Type other than JSON, or none -> 415 (BentoML would silently parse any unknown type as JSON, and
      try to read forms as multipart; a POST without a Content-Type is what a hostile page can send
      cross-origin without asking the browser first);
    * a body larger than ``MAX_BODY_BYTES`` -> 413, before it is read;
    * the 400 message (:func:`.error_answers.send_rewritten_400`).

    Large requests have taken their turn before they get here (:mod:`.turns`, the worker's outermost layer).

    Responses other than 400 pass through untouched, so the hot path costs one header scan.
    """

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
        if length is None:  # a body of unknown size (chunked) is read first, to the limit
            buffered = await self._buffered(receive, send)
            if buffered is None:
                return None
            receive = buffered
        return await self._guarded(scope, receive, send)

    async def _guarded(self, scope, receive, send):
        """The app, with the body's chunks kept to explain an encoding problem in a 400."""
        body: list[bytes] = []  # references to the body's chunks, to explain an encoding problem in a 400

        async def keeping():
            message = await receive()
            if message["type"] == "http.request":
                body.append(message.get("body", b""))
            return message

        held: dict = {}

        async def explaining_400(message):
            if message["type"] == "http.response.start" and message["status"] == 400:
                held["start"], held["body"] = message, []
                return None
            if "start" not in held or message["type"] != "http.response.body":
                return await send(message)
            held["body"].append(message.get("body", b""))
            if message.get("more_body", False):
                return None
            await error_answers.send_rewritten_400(send, held["start"], b"".join(held["body"]), b"".join(body))
            return None

        await self.app(scope, keeping, explaining_400)

    async def _buffered(self, receive, send):
        """Read the whole body up to the limit (also when it has no Content-Length: chunked): a receive that
        replays it; None after answering 413."""
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
        return replaying(chunks, receive)


# --------------------------------------------------------------------------- bounded metrics labels
UNKNOWN_ENDPOINT = "/<unknown>"
SYSTEM_PATHS = frozenset({"/", "/docs.json", "/healthz", "/livez", "/readyz", "/metrics", "/metadata"})
SYSTEM_PREFIXES = ("/assets/", "/static_content/")
_ORIGINAL_PATH = "papertrack.original_path"


def known_path(path: str, routes: Iterable[str] = ()) -> bool:
    """A path the service answers (its API routes, BentoML's system routes and static assets)."""
    return path in SYSTEM_PATHS or path in routes or path.startswith(SYSTEM_PREFIXES)


def install_bounded_metrics(routes: Callable[[], Iterable[str]]) -> None:
    """Bounded Prometheus labels: make BentoML's app factory use a metrics middleware that labels every path
    outside :func:`known_path` as :data:`UNKNOWN_ENDPOINT` (``routes()`` lists the API routes; the request
    itself is untouched and still gets its 404). BentoML labels its HTTP metrics with the raw request path, so
    every distinct missing URL added series for ever: 20,000 of them grew a worker from 354 to 1,075 MB and
    ``/metrics`` to 87 MB."""
    from papertrack.serving.http import private_hooks

    original = private_hooks.bentoml_metrics_middleware()
    if getattr(original, "papertrack_bounded", False):
        return

    class BoundedPathMetrics(original):
        papertrack_bounded = True

        def __init__(self, app, **options):
            super().__init__(_restore_path(app), **options)
            self._routes: frozenset[str] | None = None

        async def __call__(self, scope, receive, send):
            if scope["type"] == "http":
                if self._routes is None:
                    self._routes = frozenset(routes())
                if not known_path(scope["path"], self._routes):
                    scope = {**scope, "path": UNKNOWN_ENDPOINT, _ORIGINAL_PATH: scope["path"]}
            await super().__call__(scope, receive, send)

    private_hooks.replace_bentoml_metrics_middleware(BoundedPathMetrics)


def _restore_path(app):
    async def restored(scope, receive, send):
        if _ORIGINAL_PATH in scope:
            scope = {**scope, "path": scope[_ORIGINAL_PATH]}
            del scope[_ORIGINAL_PATH]
        await app(scope, receive, send)

    return restored
