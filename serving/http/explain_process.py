"""The expensive explanations of a worker, computed in a child process of it.

An explanation of a long abstract with many tracks, terms and neighbours costs ~50-110 ms of Python and NumPy.
On a thread of the worker it held the GIL that the event loop needs for every step of every other request: under
320 such ``/explain`` at 32 at once, ``GET /healthz`` waited for the GIL behind it (p99 36-52 ms on a quiet
machine, 55-85 ms with other work on the cores). In a child process the event loop only waits for the answer's
bytes.

The child is forked from the worker once the model is loaded (it shares the model's memory, copy on write, and
loads nothing), one per worker: one explanation at a time, as the one-thread pool did. It answers with the JSON
body; a child that dies (killed, out of memory) is replaced, and the request it was computing is tried once more
in the new one (a 503 that says to retry if that one dies too).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

logger = logging.getLogger("bentoml.papertrack")

_predictor: Any = None  # the worker's TrackPredictor, inherited by the forked child


def explanation_body(
    head: Any, abstract: str, title: str | None, top_k: int, terms: int, neighbors: int, model: dict
) -> bytes:
    """The ``/explain`` answer's JSON body from ``head`` (the predictor of the asked taxonomy): what the event loop
    answers itself, and what the child answers with."""
    from papertrack.serving.http import explain_api

    result = explain_api.bounded(
        explain_api.explain(head, abstract, title, top_k, n_terms=terms, n_neighbors=neighbors)
    )
    result["model"] = model
    return json.dumps(result, ensure_ascii=False).encode("utf-8")


def _explain_json(taxonomy: str | None, *args: Any) -> bytes:
    """In the child: :func:`explanation_body` of its copy of the worker's predictor."""
    return explanation_body(_predictor.head(taxonomy), *args)


def _ready() -> int:
    import os

    return os.getpid()


def _follow_the_worker(worker: int) -> None:
    """In the child, first: it ends with the worker that forked it, however the worker ends (a worker killed,
    or stopped by BentoML, runs no clean-up: its children were left running, ~500 MB each, holding its listening
    socket). The signal handlers inherited from the worker are the server's: SIGTERM ends the child again, SIGINT
    (a Ctrl-C to the terminal's process group) is left to the worker."""
    import os
    import signal
    import threading
    import time

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # Linux: the kernel ends the child when the worker's thread that forked it (its main thread) ends
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

    def watch() -> None:  # everywhere: a child whose worker is gone has been handed to another parent
        while os.getppid() == worker:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="papertrack-follow-worker", daemon=True).start()


class ChildGone(RuntimeError):
    """The child died twice while computing the request's explanation (it is replaced for the next one)."""


class ExplainProcess:
    """One forked child that computes explanations for the worker (module doc)."""

    def __init__(self, predictor: Any):
        self.predictor = predictor
        self.pool = self._start()

    def _start(self) -> ProcessPoolExecutor:
        global _predictor
        _predictor = self.predictor  # what the child inherits
        import os

        pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_follow_the_worker,
            initargs=(os.getpid(),),
        )
        pool.submit(_ready).result()  # fork now, with the model loaded (at start-up: before the server runs)
        return pool

    def pid(self) -> int:
        return self.pool.submit(_ready).result()

    async def explain(self, loop, head: Any, *args: Any) -> bytes:
        """The JSON body of the explanation of ``head`` (the predictor the request asked for) with ``args`` (the
        abstract, title, top_k, terms, neighbors and the model's JSON)."""
        taxonomy = head.taxonomy if head is not self.predictor else None
        for _ in (1, 2):  # a child that died is replaced, and the request tried once more in the new one
            pool = self.pool
            try:
                return await loop.run_in_executor(pool, _explain_json, taxonomy, *args)
            except BrokenProcessPool:
                if self.pool is pool:  # the first request to see it replaces the child
                    logger.warning("the explanation process of this worker stopped; starting another")
                    pool.shutdown(wait=False, cancel_futures=True)
                    self.pool = self._start()
        raise ChildGone("the explanation stopped twice (its process died); send the request again later")
