"""The service's ASGI middlewares (added with BentoML's public ``add_asgi_middleware``), outermost first:

* :class:`OriginGuard` — allowed Host names (DNS rebinding) and same-origin browser calls only;
* :class:`UnknownPaths` — the JSON 404 of a path the service does not have;
* :class:`SpecRoute` — ``GET /docs.json``: the service's own spec (:mod:`.openapi`), answered before BentoML's.

Each answers a request themselves or pass it on untouched; neither changes another layer's answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from papertrack import settings
from papertrack.serving.http.error_answers import error_body, not_found_message, respond

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


# --------------------------------------------------------------------------- UnknownPaths
class UnknownPaths:
    """A path outside ``paths`` (and not under one of ``prefixes``) gets the service's JSON 404 here: BentoML
    hands its mounted app only the paths one of the app's routes matches, and answers the others in plain text."""

    def __init__(self, app, paths: Iterable[str], prefixes: tuple[str, ...] = ()):
        self.app, self.paths, self.prefixes = app, frozenset(paths), prefixes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in self.paths or scope["path"].startswith(self.prefixes):
            return await self.app(scope, receive, send)
        await respond(send, 404, error_body(not_found_message(404, scope["method"], scope["path"], None)))


# --------------------------------------------------------------------------- SpecRoute
SPEC_PATH = "/docs.json"


class SpecRoute:
    """Answers ``GET /docs.json`` with ``spec()`` (:func:`.openapi.spec`: built once per worker), other methods with
    a 405."""

    def __init__(self, app, spec: Callable[[], dict]):
        self.app, self.spec = app, spec

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != SPEC_PATH:
            return await self.app(scope, receive, send)
        if scope["method"] not in ("GET", "HEAD"):
            message = not_found_message(405, scope["method"], SPEC_PATH, "GET, HEAD")
            return await respond(send, 405, error_body(message), [(b"allow", b"GET, HEAD")])
        await respond(send, 200, json.dumps(self.spec()).encode("utf-8"))
