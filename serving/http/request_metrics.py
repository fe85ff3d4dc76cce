"""Bounded Prometheus labels: a request to a path the service does not have is counted as ``/<unknown>``.

BentoML labels its HTTP metrics (request count, duration histogram, in-progress gauge) with the raw
request path, so every distinct missing URL (``GET /no-such-page-123``) adds series that live in every
worker's memory, in the multiprocess files and in every ``/metrics`` answer, for ever: 20,000 such
requests grew a worker from 354 to 1,075 MB and ``/metrics`` to 87 MB. :func:`install` replaces
BentoML's metrics middleware with :class:`BoundedPathMetrics`, which labels every path outside
:func:`known_path` as :data:`UNKNOWN_ENDPOINT` (the request itself is untouched and still gets its 404).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

UNKNOWN_ENDPOINT = "/<unknown>"
SYSTEM_PATHS = frozenset({"/", "/docs.json", "/healthz", "/livez", "/readyz", "/metrics", "/metadata"})
SYSTEM_PREFIXES = ("/assets/", "/static_content/")
_ORIGINAL_PATH = "papertrack.original_path"


def known_path(path: str, routes: Iterable[str] = ()) -> bool:
    """A path the service answers (its API routes, BentoML's system routes and static assets)."""
    return path in SYSTEM_PATHS or path in routes or path.startswith(SYSTEM_PREFIXES)


def install(routes: Callable[[], Iterable[str]]) -> None:
    """Make BentoML's app factory use :class:`BoundedPathMetrics`; ``routes()`` lists the API routes."""
    from bentoml._internal.server.http import instruments

    original = instruments.RunnerTrafficMetricsMiddleware
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

    instruments.RunnerTrafficMetricsMiddleware = BoundedPathMetrics


def _restore_path(app):
    async def restored(scope, receive, send):
        if _ORIGINAL_PATH in scope:
            scope = {**scope, "path": scope[_ORIGINAL_PATH]}
            del scope[_ORIGINAL_PATH]
        await app(scope, receive, send)

    return restored
