"""Which of the layouts (``FORMATS``) a file uses: the extension first (".gz" looked through), then its first
lines — '[' starts a JSON array, '{' JSON lines, other text is one of the two text layouts."""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from papertrack.features.ingest.decoding import LongLine, read_head
from papertrack.features.ingest.records import IngestError
from papertrack.features.ingest.text_blocks import is_label_line, iter_blocks, looks_like_authors

FORMATS = ("jsonl", "json", "csv", "text-labeled", "text-unlabeled")
_DETECT_BLOCKS = 6  # how many leading text blocks may hold the first label line


def detect_format(path: str | PathLike, override: str | None = None) -> str:
    """Tell which of ``FORMATS`` a file uses; ``override`` (if given) wins.

    Otherwise the extension decides (".gz" ignored): .jsonl/.ndjson, .json (a JSON array, or
    JSON lines despite the name), .csv.  Anything else is sniffed: '[' starts a JSON array,
    '{' JSON lines, and other text is one of the two text layouts.
    """
    if override is not None:
        return check_format_name(path, override)
    return classify(path, read_head(path))


def check_format_name(path: str | PathLike, fmt: str) -> str:
    """``fmt`` itself when it is one of ``FORMATS``, else ``IngestError``."""
    if fmt not in FORMATS:
        raise IngestError(path, None, f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    return fmt


def _extension(path: str | PathLike) -> str:
    """The lower-case extension, looking through a trailing ".gz"."""
    name = Path(path).name.lower().removesuffix(".gz")
    return Path(name).suffix


def classify(path: str | PathLike, head: list[str]) -> str:
    """The format of a file, from its extension and then from its first lines."""
    ext = _extension(path)
    if ext in (".jsonl", ".ndjson"):
        return "jsonl"
    if ext == ".csv":
        return "csv"
    text = "\n".join(head).lstrip()
    if text.startswith("["):
        return "json"
    if text.startswith("{") or ext == ".json":
        if ext == ".json" and text.startswith("{") and len([line for line in head if line.strip()]) == 1:
            return "json"  # one JSON object: a document, not JSON lines
        if _looks_like_json_lines(text) or any(
            isinstance(line, LongLine) and line.lstrip().startswith("{") for line in head[:1]
        ):
            return "jsonl"
        raise IngestError(path, None, "neither a JSON array nor JSON lines (one object per line)")
    if "\x00" in text:
        raise IngestError(path, None, "cannot detect the format: the content looks binary")
    return _classify_text(head)


def _looks_like_json_lines(text: str) -> bool:
    """True when the first line holds one whole JSON object (``{...}``)."""
    first = text.split("\n", 1)[0].strip()
    return first.startswith("{") and first.endswith("}")


def _classify_text(head: list[str]) -> str:
    """Return "text-labeled" when one of the first blocks is a label line followed by authors, or a label
    line under comment lines (as ``papertrack suggest`` writes it, authors or not)."""
    blocks = list(iter_blocks(enumerate(head, start=1), comments=True))[: _DETECT_BLOCKS + 1]
    for block, following in zip(blocks, blocks[1:]):
        if is_label_line(block) and (looks_like_authors(following.text) or block.comments):
            return "text-labeled"
    return "text-unlabeled"
