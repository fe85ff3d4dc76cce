"""``-`` as an input: standard input copied to a private temporary file (every reader of an input opens it more
than once — format detection, then the records, the labeler's progress total), at most
``InputLimits.max_bytes`` of it (``PAPERTRACK_MAX_INPUT_BYTES``; a pipe of endless bytes used to fill the disk),
and removed when the process ends — on SIGTERM too (:func:`exits_on_sigterm`, around the commands that read
``-``), which by default ends a process without running its exit handlers (``timeout``, ``kill``, a container
stopping)."""

from __future__ import annotations

import atexit
import functools
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from papertrack.errors import UsageError
from papertrack.features.ingest.decoding import limits, size_text
from papertrack.features.ingest.records import STDIN_NAME, name_input

_BLOCK = 1 << 20
P = ParamSpec("P")
R = TypeVar("R")


def copy_stdin(stream=None) -> Path:
    """Standard input (or ``stream``, the bytes to read, for tests) copied to a private temporary file, removed
    when the process exits; ``UsageError`` once more than ``InputLimits.max_bytes`` arrived (the copy is then
    removed at once)."""
    if stream is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError(
                "'-' reads standard input, but it is a terminal: pipe a dump in "
                "(e.g. zcat dump.gz | papertrack label - -o out.jsonl)"
            )
        stream = sys.stdin.buffer
    folder = Path(tempfile.mkdtemp(prefix="papertrack-stdin-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = folder / "stdin"
    cap = limits().max_bytes
    copied = 0
    try:
        with open(path, "wb") as copy:
            while block := stream.read(_BLOCK):
                copied += len(block)
                if copied > cap:
                    shutil.rmtree(folder, ignore_errors=True)
                    raise UsageError(_over_cap(cap))
                copy.write(block)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise UsageError(
            f"cannot copy standard input to {path}: {exc.strerror}; set TMPDIR to a folder with "
            f"space, or pass the file itself"
        ) from None
    name_input(path, STDIN_NAME)
    return path


def _over_cap(cap: int) -> str:
    return (
        f"{STDIN_NAME}: more than {size_text(cap)} arrived on standard input, over the limit of one input "
        f"(PAPERTRACK_MAX_INPUT_BYTES, now {cap:,} bytes); stopped copying it. Split the input, or set "
        f"PAPERTRACK_MAX_INPUT_BYTES to a larger number of bytes"
    )


def exits_on_sigterm(command: Callable[P, R]) -> Callable[P, R]:
    """``command`` with SIGTERM raising ``SystemExit(143)`` in the main thread while it runs (when nothing else
    handles SIGTERM), so ``finally`` blocks and exit handlers run — the copy of standard input is removed, as on
    Ctrl-C. The previous handler is back when the command returns (a test runner calling it keeps its own)."""

    @functools.wraps(command)
    def running(*args: P.args, **kwargs: P.kwargs) -> R:
        if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) not in (
            signal.SIG_DFL,
            None,
        ):
            return command(*args, **kwargs)
        signal.signal(signal.SIGTERM, _terminated)
        try:
            return command(*args, **kwargs)
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return running


def _terminated(signum: int, frame) -> None:
    raise SystemExit(128 + signum)
