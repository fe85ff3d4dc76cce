"""What one input may hold (``InputLimits``), the limits in force and how to change them for a block."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class InputLimits:
    """What one input may hold; reading stops at each limit with bounded memory (nothing is read whole).

    * ``max_bytes``: bytes read from one file once decompressed (a gzip "bomb" — 300 kB holding 300 MB — is
      refused with ``IngestError`` when it passes this, whatever its compressed size);
    * ``max_line``: bytes in one line; a longer line is not kept in memory: in JSON lines and the text layouts it
      becomes one ``BadRecord`` (``kind="too-long"``), in CSV it is fatal (the quoting cannot be followed);
    * ``max_record``: characters of one record (a JSON array element, a CSV row, a text paragraph): a longer
      one is one ``BadRecord`` (``kind="too-long"``), skipped without being kept in memory.
    """

    max_bytes: int = int(os.environ.get("PAPERTRACK_MAX_INPUT_BYTES", 8 << 30))
    max_line: int = 1 << 20
    max_record: int = 1 << 20


_LIMITS: ContextVar[InputLimits] = ContextVar("papertrack_ingest_limits", default=InputLimits())  # noqa: B039 - frozen


def limits() -> InputLimits:
    """The limits in force (see :func:`input_limits`)."""
    return _LIMITS.get()


@contextmanager
def input_limits(**changes: int) -> Iterator[InputLimits]:
    """Read with other limits inside the block, e.g. ``with input_limits(max_bytes=100 << 20): ...``."""
    token = _LIMITS.set(replace(_LIMITS.get(), **changes))
    try:
        yield _LIMITS.get()
    finally:
        _LIMITS.reset(token)


def size_text(n: int) -> str:
    """A byte count for messages: "1 MiB", "8 GiB", "20,000 bytes"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift:,} {unit}"
    return f"{n:,} bytes"
