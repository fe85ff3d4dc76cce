"""Who may call the service: allowed Host names (DNS rebinding) and same-origin browser calls only.

The service binds the loopback interface by default, yet a web page the user opens could still make
their browser call it: by a cross-origin ``fetch`` (its ``Origin`` header names the other site) or by
DNS rebinding (the other site's name resolves to 127.0.0.1, so ``Host`` carries that name). So:

* ``Host`` must be a host name or address with an optional port (``name[:port]``, ``[v6]:port``) — else 400
  (``127.0.0.1:1@evil.com`` is no host: by URL rules it names ``evil.com``);
* ``Host`` must name an allowed host: ``127.0.0.1``, ``localhost`` or ``[::1]`` (any port), plus the
  names in ``PAPERTRACK_ALLOWED_HOSTS`` (comma-separated; ``*`` allows any) — else 421;
* a request with an ``Origin`` header (browsers send it on every POST and on cross-origin requests)
  must come from the page of this same service (``Origin`` host:port = ``Host``) — else 403.
  The service's own page calling ``/predict`` from the same origin keeps working; curl, the labeler
  and other programs send no ``Origin``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from papertrack import settings
from papertrack.serving.http.guard import error_body, request_headers, respond

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
# RFC 9110 Host = uri-host [ ":" port ]; names and IPv4 addresses, or an IPv6 address in brackets
_HOST = re.compile(r"(?:[a-z0-9](?:[a-z0-9._-]*[a-z0-9.])?|\[[0-9a-f:.]+\])(?::[0-9]{0,5})?", re.IGNORECASE)


def host_name(host: str) -> str:
    """``example.org:3000`` -> ``example.org``; ``[::1]:3000`` -> ``[::1]`` (lower case)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class OriginGuard:
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
