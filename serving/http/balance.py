"""Spread keep-alive clients over the workers: a connection's ``every``-th request, or its first request
after ``max_age`` seconds, is answered with ``Connection: close``, so the client reconnects and the
kernel hands the new connection to whichever worker accepts it first — usually an idle one.

Without it, a client that opens its keep-alive connections at once often has all of them accepted by
one of the 2 workers, for as long as they live: throughput halved (1,658 -> 842 req/s) and p99 rose
~6x in 3 of 6 runs. The age limit matters for a slow model (a few requests per second per connection).
Reconnecting costs one TCP handshake on loopback.
"""

from __future__ import annotations

import time
from collections.abc import Callable

RECONNECT_EVERY = 64
MAX_AGE_SECONDS = 1.0
_MAX_TRACKED = 4096  # connections remembered at once (entries of closed connections are dropped in bulk)


class ConnectionRecycler:
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
