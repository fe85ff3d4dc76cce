"""``-`` as an input: standard input, copied to a temporary file first.

Every reader of an input opens it more than once (format detection, then the records; the labeler's
progress total), so a pipe is copied once to a private temporary file (removed when the process exits)
and read from there. Rows and messages name it ``<stdin>``. Bytes are copied as they come: a gzip
stream is recognised by its magic bytes; the format is detected from the content, because there is no
file name (``--format csv`` for CSV).
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from papertrack.errors import UsageError
from papertrack.features.ingest import STDIN_NAME, name_input

STDIN_ARGUMENT = "-"


def is_stdin(path: str | Path) -> bool:
    return str(path) == STDIN_ARGUMENT


def expand_stdin(paths: Sequence[Path], stream=None) -> list[Path]:
    """``paths`` with ``-`` replaced by a copy of standard input (``stream``: the bytes to read, for tests)."""
    paths = [Path(p) for p in paths]
    if sum(is_stdin(p) for p in paths) > 1:
        raise UsageError("'-' (standard input) is given more than once; it can be read only once")
    return [copy_stdin(stream) if is_stdin(p) else p for p in paths]


def copy_stdin(stream=None) -> Path:
    """Standard input copied to a private temporary file, removed when the process exits."""
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
    try:
        with open(path, "wb") as copy:
            shutil.copyfileobj(stream, copy, 1 << 20)
    except OSError as exc:
        raise UsageError(
            f"cannot copy standard input to {path}: {exc.strerror}; set TMPDIR to a folder with "
            f"space, or pass the file itself"
        ) from None
    name_input(path, STDIN_NAME)
    return path
