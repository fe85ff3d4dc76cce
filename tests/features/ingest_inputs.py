"""Inputs for the tests of papertrack.features.ingest: the abstracts, files written byte-exactly (gzip when
asked), JSON lines, the shared samples, and ``iter_records`` without the text dumps' header paragraphs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from papertrack.features.ingest import BadRecord, Record, iter_records


def records_of(*args, **kwargs):
    """``iter_records`` without the BadRecords reporting a text dump's header paragraph."""
    return [
        item for item in iter_records(*args, **kwargs) if not (isinstance(item, BadRecord) and item.kind == "header")
    ]


SHARED = Path(__file__).parents[3] / "shared" / "data"


ABSTRACT_A = "We propose a new optimiser. It converges faster than Adam on every benchmark we tried."


ABSTRACT_B = "Graph neural networks struggle with long-range dependencies. We add virtual nodes."


ABSTRACT_C = "Reward models are brittle. We study how preference data shapes them."


def write(path: Path, text: str, *, compress: bool = False, encoding: str = "utf-8") -> Path:
    """Write ``text`` byte-exactly (no newline translation), gzip-compressed when asked."""
    data = text.encode(encoding)
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def jsonl(*objects: object) -> str:
    return "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in objects)


def records(items: list) -> list[Record]:
    return [item for item in items if isinstance(item, Record)]


def shared_file(relative: str) -> Path:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"shared sample {path} is not available")
    return path
