"""papertrack's HTTP protocol in the workers: uvicorn's h11 protocol with a deadline for receiving a request (a
client that sends its headers byte by byte, or never finishes its body, is disconnected instead of holding a
connection, and a worker's socket, forever), and the place where the worker's app gets its outermost layer
(:mod:`.turns`: large requests take turns before BentoML's middlewares see them).

BentoML 1.4 runs each HTTP worker on uvicorn (``_bentoml_impl.worker.service``: ``uvicorn.Config(app, ...,
timeout_keep_alive=..., timeout_graceful_shutdown=...)``, the HTTP protocol left at ``"auto"``: h11 unless
httptools is installed). Nothing there bounds the reading of a request:

* uvicorn's ``timeout_keep_alive`` (``bentoml serve --timeout-keep-alive``, default 5 s) is armed only after a
  response, and the first byte a client sends cancels it for good;
* BentoML's ``traffic.timeout`` (a middleware: 504 after 60 s) starts once the headers are parsed and the app
  is called — a client still sending its headers is never seen by it, and after the 504 the connection stays
  open while the client trickles the rest of its body;
* uvicorn has no request-read timeout at all (uvicorn issue #157, "--timeout-request-start").

So each connection gets one: a whole request — headers and body — must arrive within ``traffic.timeout``
seconds (the service's, 60; the same bound BentoML gives the handler) of the connection opening or of the
previous answer, else the connection is closed. :func:`install` makes this protocol uvicorn's ``"auto"`` HTTP
protocol in the process that imports the service (every BentoML worker does, before it starts uvicorn).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import h11

from papertrack.serving.http import private_hooks

logger = logging.getLogger("bentoml.papertrack")

SERVICE_NAME = "papertrack"
DEFAULT_SECONDS = 60.0  # BentoML's default traffic.timeout


def configured_seconds(service: str = SERVICE_NAME) -> float:
    """The service's ``traffic.timeout`` from BentoML's merged configuration (the ``@bentoml.service`` value,
    overridden by ``BENTOML_CONFIG_OPTIONS='services.papertrack.traffic.timeout=N'`` or a config file)."""
    try:
        seconds = private_hooks.service_traffic_timeout(service)
    except Exception as error:  # BentoML's internals moved: the documented default rather than no bound, said
        logger.warning("no traffic.timeout of %s (%s); a request gets %g s", service, error, DEFAULT_SECONDS)
        return DEFAULT_SECONDS
    return DEFAULT_SECONDS if seconds is None else seconds


class RequestDeadlineProtocol(private_hooks.h11_protocol()):  # type: ignore[misc]
    """uvicorn's h11 protocol with a deadline for receiving each request (module doc)."""

    seconds: float | None = None  # None: the service's traffic.timeout, read at the first connection
    outermost: Callable[[Any], Any] | None = None  # set by install(): wraps the worker's app, once per app
    _wrapped: tuple[Any, Any] | None = None  # (the app uvicorn loaded, its wrapper): one per worker

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cls = type(self)
        if cls.outermost is not None:
            if cls._wrapped is None or cls._wrapped[0] is not self.app:
                cls._wrapped = (self.app, cls.outermost(self.app))
            self.app = cls._wrapped[1]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._receiving():
            self._disarm()  # the whole request is in (or the connection is ending)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start a pipelined request already received in full
        if not self.transport.is_closing() and self._receiving():
            self._arm()  # the next request on this keep-alive connection, same bound

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._disarm()  # the connection now belongs to the websocket protocol
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        cls = type(self)
        if cls.seconds is None:
            cls.seconds = configured_seconds()
        self._deadline = self.loop.call_later(cls.seconds, self._expired)

    def _disarm(self) -> None:
        deadline = getattr(self, "_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._deadline = None

    def _receiving(self) -> bool:
        """Between requests or inside one whose headers or body are still arriving (h11 stays IDLE until
        the whole header block is in)."""
        return self.conn.their_state is h11.IDLE or self.conn.their_state is h11.SEND_BODY

    def _expired(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
            logger.info("closed the connection of %s: no complete request within %g s", client, type(self).seconds)
            self.transport.close()


def install(outermost: Callable[[Any], Any] | None = None) -> None:
    """Make :class:`RequestDeadlineProtocol` uvicorn's ``"auto"`` HTTP protocol in this process (what a
    BentoML worker's ``uvicorn.Config`` uses); ``outermost(app)``: the worker's app as every connection calls it
    (made once, at the first connection)."""
    RequestDeadlineProtocol.outermost = outermost
    private_hooks.set_uvicorn_auto_protocol(f"{__name__}:RequestDeadlineProtocol")
