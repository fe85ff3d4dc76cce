"""Large requests take turns in a worker, before anything else in it sees them.

Every request's parsing, validation and answer run in the worker's one event loop, and so do BentoML's layers
around them (metrics, OpenTelemetry, access log, timeout: ~45% of a refused 20 KB request's time in a profile).
When 16 large requests were in progress at once in a worker, a ``GET /healthz`` waited behind all of their steps
(p99 100-186 ms under 320 20 KB ``/explain`` at 32 at once, even when each was refused with a 400); with turns
taken inside the app (after those layers) still 70-95 ms.

:class:`LargeRequestTurns` is the outermost layer of the worker's app — the HTTP protocol puts it there
(:mod:`.read_deadline`), in front of uvicorn's and BentoML's middlewares — for ``POST`` to the API paths:

* a body of ``LARGE_BODY_BYTES`` or more (or of unknown size: chunked) is read whole first — a client that sends
  slowly holds no turn (the protocol's read deadline bounds it) —, then waits for one of ``LARGE_AT_ONCE`` turns
  of the worker, and the app gets the body replayed;
* smaller bodies never wait; a body over ``max_body_bytes`` is not read here (past the limit, the rest is left to
  the app, whose :class:`~.middleware.RequestGuard` answers 413): memory stays bounded;
* nothing else (``GET /healthz``, the page) ever waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from papertrack.serving.http.middleware import replaying, request_headers

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

LARGE_BODY_BYTES = 8 * 1024
"""A body this large (a long abstract, a batch, a dump) takes its turn; /predict of a typical abstract (~1.5 KB)
never waits."""
LARGE_AT_ONCE = 2
"""Large requests in a worker's app at once (2 workers on 2 cores; their heavy work runs off the event loop)."""


def content_length(scope: Scope) -> int | None:
    """The request's Content-Length, as :class:`~.middleware.RequestGuard` reads it; None when absent or not a
    number (RequestGuard answers that)."""
    (length,) = request_headers(scope, b"content-length")
    try:
        return None if length is None else int(length.encode("latin-1"))
    except ValueError:
        return None


class LargeRequestTurns:
    """The outermost ASGI layer of a worker (module doc)."""

    def __init__(self, app: ASGIApp, paths: Iterable[str], max_body_bytes: int):
        self.app = app
        self.paths = frozenset(paths)
        self.max_body_bytes = max_body_bytes
        self._turns: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    def turns(self) -> asyncio.Semaphore:
        """The turns of the running event loop (an asyncio semaphore belongs to one loop; tests start several)."""
        loop = asyncio.get_running_loop()
        if self._turns is None or self._turns[0] is not loop:
            self._turns = (loop, asyncio.Semaphore(LARGE_AT_ONCE))
        return self._turns[1]

    async def __call__(self, scope: Scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.paths:
            return await self.app(scope, receive, send)
        length = content_length(scope)
        if length is not None and not LARGE_BODY_BYTES <= length <= self.max_body_bytes:
            return await self.app(scope, receive, send)
        chunks: list[Message] = []
        size, whole = 0, False
        while size <= self.max_body_bytes:
            message = await receive()
            chunks.append(message)
            if message["type"] != "http.request":
                break  # the client went away: the app sees it
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                whole = True
                break
        replayed = replaying(chunks, receive)
        if whole and size >= LARGE_BODY_BYTES:
            async with self.turns():
                return await self.app(scope, replayed, send)
        return await self.app(scope, replayed, send)
