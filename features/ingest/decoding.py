"""Read paper abstracts (and optional "Area · Subarea" labels) from the input layouts we accept.

Layouts (``FORMATS``): JSON lines, a JSON array, CSV, and two plain-text layouts pasted from
paper-search pages ("text-labeled": label / authors / abstract blocks, "text-unlabeled": one
abstract per paragraph).  Every layout may be gzip-compressed, start with a UTF-8 BOM and use CRLF.

* ``iter_records`` streams one ``Record`` or ``BadRecord`` per record found, in input order.
  Problems with a single record become a ``BadRecord``; problems with the whole file raise
  ``IngestError`` (always with the path, and the line when there is one).
* ``load_dataset`` is the strict reader for training: invalid records are fatal, empty abstracts
  and duplicates are skipped and counted in a ``LoadSummary``.

Hostile text: a record whose used fields hold a lone surrogate escape (JSON ``"\\udc00"``, not a
character, cannot be written as UTF-8) is a ``BadRecord`` naming the field — not repaired, since any
replacement would change the data silently. A UTF-16/UTF-32 file (byte-order mark, or NUL bytes between
the characters) is an ``IngestError`` saying how to convert it. Standard input is read from a copy that
rows and messages name ``<stdin>`` (:func:`display_name`, :mod:`papertrack.features.stdin`).

Model-suggested labels (written by ``papertrack suggest``): a record whose label is still the model's
own guess is ``Record.suggested``; ``load_dataset`` leaves such records out of training (counted)
unless ``accept_suggested``. In the text layouts a line starting with ``#`` and a space is a comment;
the comment ``# model-suggested: <label>`` above a label line records the guess. In JSON/CSV the
field ``model_suggested`` does. Either way the record counts as suggested only while its label still
equals the guess: a person who edits the label, or deletes the marker, makes it a human label.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import hashlib
import json
import os
import re
import shlex
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path
from typing import BinaryIO, NamedTuple

from papertrack.errors import PapertrackError
from papertrack.features.labels import KNOWN_AREAS, SEPARATORS, format_label, is_known_area, normalise_label

FORMATS = ("jsonl", "json", "csv", "text-labeled", "text-unlabeled")
_AUTHORS_MARKER = re.compile(r"\s*(?:等|et\s+al\.?)$")
_SENTENCE_END = re.compile(r"[a-z]{2}[.!?](?:\s|$)")  # "works. We", not "E. Weston"
_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"
# byte-order marks of the encodings people save "Unicode text" in (UTF-32 first: its LE mark starts like UTF-16's)
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
_HEAD_CHARS = 64 * 1024  # how much text format detection looks at
_DETECT_BLOCKS = 6  # how many leading text blocks may hold the first label line
_MAX_LABEL_LINE = 200
_MAX_HEADER = 120
_MAX_AUTHOR_WORDS = 7
_MAX_AUTHOR_CHARS = 80
_JSON_BLOCK = 1 << 16  # bytes read at a time when streaming a JSON array
_TOO_DEEP = "JSON nested too deeply (more than about 1,000 levels)"

# A CSV field may hold a whole (long) abstract: the csv module's default limit (131,072 characters)
# would abort the whole file at one long field. Over-long abstracts are reported per record instead.
csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone surrogate escape ("\\udc00" in JSON): not a character
# the fields of a JSON/CSV record that papertrack uses (checked for lone surrogates)
_TEXT_FIELDS = ("id", "abstract", "title", "label", "topic", "area", "subarea", "authors", "venue", "year")
_COMMENT_LINE = re.compile(r"#(?:\s|$)")  # at column 0: "# note", not "#1 on the leaderboard"
SUGGESTED_MARKER = "# model-suggested:"  # the comment naming the model's guess above a label line
SUGGESTED_FIELD = "model_suggested"  # the same in JSON/CSV


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


def _size(n: int) -> str:
    """A byte count for messages: "1 MiB", "8 GiB", "20,000 bytes"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift:,} {unit}"
    return f"{n:,} bytes"


class _LongLine(str):
    """A line over ``max_line`` bytes: its first characters only (enough to detect the layout); ``size`` is the
    line's length in bytes (its end was read and dropped without being kept)."""

    size: int

    def __new__(cls, head: str, size: int) -> _LongLine:
        self = super().__new__(cls, head)
        self.size = size
        return self


def _too_long_line(source: str, line: int, size: int) -> BadRecord:
    cap = limits().max_line
    return BadRecord(
        source,
        line,
        f"line is {size:,} bytes, over the {_size(cap)} limit of one line (not read; is the file one record per line?)",
        kind="too-long",
    )


STDIN_NAME = "<stdin>"  # how rows and messages name standard input (``-``), which is read from a copy
_DISPLAY_NAMES: dict[str, str] = {}  # path of such a copy -> the name shown instead


def display_name(path: str | PathLike) -> str:
    """How rows (``source``) and messages name an input: its path, or ``<stdin>`` for the copy of stdin."""
    return _DISPLAY_NAMES.get(os.fspath(path), str(path))


def name_input(path: str | PathLike, name: str) -> None:
    """Show ``path`` as ``name`` in rows and messages (see :mod:`papertrack.features.stdin`)."""
    _DISPLAY_NAMES[os.fspath(path)] = name


class IngestError(PapertrackError):
    """A fatal problem with an input file (missing, empty, undecodable, unreadable layout)."""

    def __init__(self, path: str | PathLike, line: int | None, message: str):
        self.path = display_name(path)
        self.line = line
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Record:
    """One usable paper: a normalised abstract with its optional title and label."""

    id: str
    abstract: str
    title: str | None
    label: str | None
    area: str | None
    subarea: str | None
    source: str
    line: int
    authors: str | None = None
    suggested: bool = False  # the label is still the model's guess (see the module doc)
    origin: str | None = None  # "venue year" when the record names both (e.g. "ICLR 2024"), else None


@dataclass(frozen=True)
class BadRecord:
    """A record that exists in the input but cannot be used; ``reason`` says why."""

    source: str
    line: int
    reason: str
    id: str | None = None
    # "empty": empty or content-free abstract; "header": a text dump's header; "too-long": a line or record over
    # the reading limits (``InputLimits``); else "invalid"
    kind: str = "invalid"


# --------------------------------------------------------------------------- labels, ids, text


def normalise_text(text: str) -> str:
    """Join wrapped lines with one space and drop blank lines and line-edge whitespace.

    Anything inside a line (LaTeX, markdown, repeated spaces) is kept as is.
    """
    return " ".join(stripped for line in text.splitlines() if (stripped := line.strip()))


def has_content(text: str) -> bool:
    """True when the text has at least one letter or digit (not only controls, zero-width or emoji)."""
    return any(ch.isalnum() for ch in text)


def abstract_key(abstract: str) -> str:
    """The form used to spot duplicates: NFC, casefolded, whitespace collapsed and stripped."""
    return " ".join(unicodedata.normalize("NFC", abstract).casefold().split())


def make_id(abstract: str) -> str:
    """A stable id derived from the abstract: the same abstract always gets the same id."""
    digest = hashlib.sha1(abstract_key(abstract).encode("utf-8")).hexdigest()
    return f"sha1-{digest[:16]}"


# --------------------------------------------------------------------------- reading files


def _check_file(path: str | PathLike) -> None:
    """Raise ``IngestError`` unless ``path`` is an existing regular file."""
    p = Path(path)
    if not p.exists():
        raise IngestError(path, None, "file not found")
    if not p.is_file():
        raise IngestError(path, None, "not a regular file")


@contextmanager
def open_input(path: str | PathLike) -> Iterator[BinaryIO]:
    """The bytes of an input file, decompressed when it is gzip (recognised by its magic bytes).

    Raises ``IngestError`` for a missing file, a directory or a file that cannot be opened; reading a
    broken gzip stream raises ``OSError``/``EOFError``/``zlib.error``, which callers report with a line.
    """
    _check_file(path)
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise IngestError(path, None, f"cannot open file: {exc.strerror}") from None
    with raw:
        is_gzip = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        yield _Counted(gzip.GzipFile(fileobj=raw) if is_gzip else raw, path, limits().max_bytes)


class _Counted:
    """A byte stream that raises ``IngestError`` once more than ``cap`` bytes (decompressed) were read from it."""

    def __init__(self, stream: BinaryIO, path: str | PathLike, cap: int):
        self.stream, self.path, self.cap, self.count = stream, path, cap, 0

    def _counted(self, data: bytes) -> bytes:
        self.count += len(data)
        if self.count > self.cap:
            hint = " (or set PAPERTRACK_MAX_INPUT_BYTES)" if self.cap == InputLimits().max_bytes else ""
            raise IngestError(
                self.path, None, f"more than {_size(self.cap)} of text (once decompressed); split the file{hint}"
            )
        return data

    def read(self, size: int = -1) -> bytes:
        return self._counted(self.stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._counted(self.stream.readline(size))

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


def _read_lines(path: str | PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each line, without its line ending (LF or CRLF).

    The file is opened with :func:`open_input` (gzip or not), a leading UTF-8 BOM is dropped, and each
    line is decoded separately so that a non-UTF-8 byte is reported with its line number.
    A line over ``InputLimits.max_line`` bytes is yielded as a ``_LongLine`` holding its first characters
    only: the rest is read in blocks and dropped, so memory stays bounded whatever the line's length.
    """
    cap = limits().max_line
    with open_input(path) as stream:
        lineno = 0
        try:
            while data := stream.readline(cap + 1):
                lineno += 1
                if lineno == 1:
                    _refuse_wide_encoding(path, data)
                    data = data.removeprefix(_UTF8_BOM)
                if len(data) > cap and not data.endswith(b"\n"):
                    size = len(data) + _skip_line(stream)
                    yield lineno, _LongLine(data[:_HEAD_CHARS].decode("utf-8", "ignore"), size)
                    continue
                yield lineno, _decode_line(path, lineno, data).rstrip("\r\n")
        except (OSError, EOFError, zlib.error) as exc:
            raise IngestError(path, lineno + 1, f"cannot read file: {exc}") from None


def _skip_line(stream: _Counted) -> int:
    """Read and drop the rest of the current line (in blocks); how many bytes that was."""
    skipped = 0
    while block := stream.readline(_JSON_BLOCK):
        skipped += len(block)
        if block.endswith(b"\n"):
            break
    return skipped


def _refuse_wide_encoding(path: str | PathLike, first_line: bytes) -> None:
    """``IngestError`` for a UTF-16/UTF-32 file (a byte-order mark, or NUL bytes where plain text in those
    encodings has them), saying how to convert it, instead of "not valid UTF-8 (byte 0xff ...)"."""
    encoding = next((name for bom, name in _WIDE_BOMS if first_line.startswith(bom)), None)
    sample = first_line[:4096]
    if encoding is None and len(sample) >= 8:

        def zeros(*offsets: int, step: int) -> bool:
            picked = b"".join(sample[offset::step] for offset in offsets)
            return picked.count(0) >= 0.9 * len(picked)

        if zeros(1, 2, 3, step=4) or zeros(0, 1, 2, step=4):
            encoding = "UTF-32"
        elif zeros(1, step=2) or zeros(0, step=2):
            encoding = "UTF-16"
    if encoding is not None:
        name = display_name(path)
        converted = "converted-" + Path(name.removesuffix(".gz")).name if name != STDIN_NAME else "converted.txt"
        raise IngestError(
            path,
            None,
            f"the file is {encoding} text, not UTF-8; convert it to UTF-8: iconv -f "
            f"{encoding} -t UTF-8 {shlex.quote(name)} > {shlex.quote(converted)}",
        )


def _decode_line(path: str | PathLike, lineno: int, data: bytes) -> str:
    """Decode one line as UTF-8 or raise ``IngestError`` naming the offending byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = data[exc.start]
        message = f"not valid UTF-8 (byte 0x{byte:02x} at column {exc.start + 1})"
        raise IngestError(path, lineno, message) from None


def _read_head(path: str | PathLike) -> list[str]:
    """The first lines of a file (about ``_HEAD_CHARS`` characters); raises if the file is empty."""
    head: list[str] = []
    size = 0
    has_content = False
    with closing(_read_lines(path)) as lines:
        for _, text in lines:
            head.append(text)
            size += len(text) + 1
            has_content = has_content or bool(text.strip()) or isinstance(text, _LongLine)
            if size >= _HEAD_CHARS and has_content:
                break
    if not has_content:
        raise IngestError(path, None, "file is empty")
    return head


# --------------------------------------------------------------------------- format detection


def detect_format(path: str | PathLike, override: str | None = None) -> str:
    """Tell which of ``FORMATS`` a file uses; ``override`` (if given) wins.

    Otherwise the extension decides (".gz" ignored): .jsonl/.ndjson, .json (a JSON array, or
    JSON lines despite the name), .csv.  Anything else is sniffed: '[' starts a JSON array,
    '{' JSON lines, and other text is one of the two text layouts.
    """
    if override is not None:
        return _check_format_name(path, override)
    return _classify(path, _read_head(path))


def _check_format_name(path: str | PathLike, fmt: str) -> str:
    """``fmt`` itself when it is one of ``FORMATS``, else ``IngestError``."""
    if fmt not in FORMATS:
        raise IngestError(path, None, f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    return fmt


def _extension(path: str | PathLike) -> str:
    """The lower-case extension, looking through a trailing ".gz"."""
    name = Path(path).name.lower().removesuffix(".gz")
    return Path(name).suffix


def _classify(path: str | PathLike, head: list[str]) -> str:
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
            isinstance(line, _LongLine) and line.lstrip().startswith("{") for line in head[:1]
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
    blocks = list(_iter_blocks(enumerate(head, start=1), comments=True))[: _DETECT_BLOCKS + 1]
    for block, following in zip(blocks, blocks[1:]):
        if _is_label_line(block) and (_looks_like_authors(following.text) or block.comments):
            return "text-labeled"
    return "text-unlabeled"


# --------------------------------------------------------------------------- records


def iter_records(
    path: str | PathLike, fmt: str | None = None, *, labeled: bool | None = None
) -> Iterator[Record | BadRecord]:
    """Iterate over every record of ``path`` in input order, unusable ones as ``BadRecord``.

    ``fmt`` is one of ``FORMATS`` (detected when None).  ``labeled=True``: a record without a
    label is a ``BadRecord``; ``None``: labels are optional; ``False``: labels are ignored.
    A missing or empty file, an unknown format or an undetectable layout raise ``IngestError``
    at the call; problems found further into the file raise it while iterating.
    """
    head = _read_head(path)
    fmt = _check_format_name(path, fmt) if fmt is not None else _classify(path, head)
    return _PARSERS[fmt](path, labeled)


def _make_record(
    source: str,
    line: int,
    abstract: str,
    *,
    labeled: bool | None,
    missing_label: str = "no label",
    label: str | None = None,
    title: str | None = None,
    record_id: str | None = None,
    authors: str | None = None,
    guess: str | None = None,
    origin: str | None = None,
) -> Record | BadRecord:
    """Build a ``Record`` from raw field values, or the ``BadRecord`` saying why it is unusable."""
    abstract = normalise_text(abstract)
    if not abstract:
        return BadRecord(source, line, "empty abstract", record_id, "empty")
    if not has_content(abstract):
        return BadRecord(
            source,
            line,
            "abstract has no letters or digits (only symbols, emoji or invisible characters)",
            record_id,
            "empty",
        )
    area = subarea = None
    if labeled is not False and label is not None:
        try:
            area, subarea = normalise_label(label)
        except ValueError as exc:
            return BadRecord(source, line, f"invalid label {label!r}: {exc}", record_id)
    elif labeled:
        return BadRecord(source, line, missing_label, record_id)
    canonical = format_label(area, subarea) if area else None
    return Record(
        record_id or make_id(abstract),
        abstract,
        title,
        canonical,
        area,
        subarea,
        source,
        line,
        authors=authors,
        origin=origin,
        suggested=canonical is not None and _same_label(guess, canonical),
    )


def _same_label(guess: str | None, canonical: str) -> bool:
    """True when ``guess`` (the model's suggestion, as written) is the label ``canonical``."""
    if not guess:
        return False
    try:
        return format_label(*normalise_label(guess)) == canonical
    except ValueError:
        return False


# --------------------------------------------------------------------------- JSON and CSV

_NO_LABEL_FIELD = "no label (field 'label', 'topic' or 'area')"


def _json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _optional_text(value: object) -> str | None:
    """A field value as normalised text, or None when it is missing or blank."""
    if value is None:
        return None
    return normalise_text(str(value)) or None


def _label_text(fields: dict[str, object]) -> str | None:
    """The raw label of a record: 'label' or 'topic', else 'area' plus optional 'subarea'."""
    label = _label_field(fields, "label") or _label_field(fields, "topic")
    if label:
        return label
    area = _label_field(fields, "area")
    return format_label(area, _label_field(fields, "subarea")) if area else None


def _label_field(fields: dict[str, object], name: str) -> str | None:
    """A stripped label field, None when missing or blank; ``ValueError`` when not a string."""
    value = fields.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"invalid label: field {name!r} is a {_json_type(value)}, not a string")
    return value.strip() or None


def record_from_mapping(obj: dict, source: str, line: int, labeled: bool | None) -> Record | BadRecord:
    """Turn one JSON object, CSV row or Parquet row (field names matched case-insensitively) into a record."""
    fields = {str(key).strip().lower(): value for key, value in obj.items()}
    record_id = _optional_text(fields.get("id"))
    surrogate = _lone_surrogate(fields)
    if surrogate is not None:
        return BadRecord(source, line, surrogate, _printable(record_id))
    if "abstract" not in fields:
        return BadRecord(source, line, "no 'abstract' field", record_id)
    abstract = fields["abstract"]
    if abstract is not None and not isinstance(abstract, str):
        reason = f"abstract is a {_json_type(abstract)}, not a string"
        return BadRecord(source, line, reason, record_id)
    try:
        label = None if labeled is False else _label_text(fields)
    except ValueError as exc:
        return BadRecord(source, line, str(exc), record_id)
    guess = fields.get(SUGGESTED_FIELD)
    return _make_record(
        source,
        line,
        abstract or "",
        labeled=labeled,
        missing_label=_NO_LABEL_FIELD,
        label=label,
        title=_optional_text(fields.get("title")),
        record_id=record_id,
        authors=_authors_text(fields.get("authors")),
        guess=guess if isinstance(guess, str) else None,
        origin=_origin(fields),
    )


def _lone_surrogate(fields: dict[str, object]) -> str | None:
    """Why a record cannot be used when one of its text fields holds a lone surrogate escape (e.g. the
    JSON ``"\\udc00"``): it is not a character, cannot be written as UTF-8 and would stop every writer."""
    for name in (*_TEXT_FIELDS, SUGGESTED_FIELD):
        value = fields.get(name)
        texts = value if isinstance(value, list) else [value]
        for text in texts:
            if isinstance(text, str) and (found := _SURROGATE.search(text)):
                return (
                    f"field {name!r} holds the lone surrogate escape \\u{ord(found.group()):04x} (half of a "
                    f"UTF-16 pair, not a character); fix or remove it in the input"
                )
    return None


def _printable(text: str | None) -> str | None:
    """``text`` with lone surrogates written as ``\\udc00`` (so it can be written as UTF-8)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if text else text


def _authors_text(value: object) -> str | None:
    """An 'authors' field (a list of names or one string) as one comma-separated line, None when empty."""
    if isinstance(value, list):
        value = ", ".join(normalise_text(str(name)) for name in value if str(name).strip())
    return _optional_text(value) if isinstance(value, str) else None


def _origin(fields: dict[str, object]) -> str | None:
    """ "venue year" (e.g. "ICLR 2024") when the record has both fields, else None."""
    venue, year = _optional_text(fields.get("venue")), _optional_text(fields.get("year"))
    return f"{venue} {year}" if venue and year else None


def _record_from_value(value: object, source: str, line: int, labeled: bool | None) -> Record | BadRecord:
    """A decoded JSON value as a record; anything but an object is a ``BadRecord``."""
    if not isinstance(value, dict):
        return BadRecord(source, line, f"JSON value is not an object (got {_json_type(value)})")
    return record_from_mapping(value, source, line, labeled)


def _parse_jsonl(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """One JSON object per line; blank lines are skipped, broken lines become ``BadRecord``."""
    source = display_name(path)
    for lineno, text in _read_lines(path):
        if isinstance(text, _LongLine):
            yield _too_long_line(source, lineno, text.size)
            continue
        item = json_line_record(text, source, lineno, labeled)
        if item is not None:
            yield item


def json_line_record(
    data: str | bytes, source: str, line: int, labeled: bool | None = None
) -> Record | BadRecord | None:
    """One line of a JSON-lines file as a record, None for a blank line.

    ``data`` is the text of the line, or its raw bytes when an engine splits the file itself (Spark):
    then a BOM on line 1 is dropped and a line that is not UTF-8 becomes a ``BadRecord``.
    """
    if isinstance(data, bytes):
        try:
            data = _decode_line(source, line, data.removeprefix(_UTF8_BOM) if line == 1 else data)
        except IngestError as exc:
            return BadRecord(source, line, exc.message)
        data = data.rstrip("\r\n")
    if not data.strip():
        return None
    try:
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        return BadRecord(source, line, f"invalid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return BadRecord(source, line, _TOO_DEEP)
    except ValueError as exc:  # an integer of more than 4,300 digits (sys.set_int_max_str_digits)
        return BadRecord(source, line, f"invalid JSON: {exc}")
    return _record_from_value(value, source, line, labeled)


def _parse_json_array(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """A JSON array of objects, streamed element by element; ``line`` is the 1-based index in the array.

    Any other top-level value (one object, a string, ...) is a fatal error: it is not a list of records.
    """
    source = display_name(path)
    chars = _JsonChars(path)
    first = chars.skip_space()
    if first == "{":
        value = chars.value(1)
        keys = ", ".join(repr(k) for k in list(value)[:8]) if isinstance(value, dict) else ""
        raise IngestError(
            path,
            1,
            f"expected a JSON array of records; the file holds one JSON object (keys: "
            f"{keys or 'none'}). Put the records in an array, or name the file .jsonl for "
            f"one object per line",
        )
    if first != "[":
        value = chars.value(1)  # raises for invalid JSON
        raise IngestError(path, 1, f"expected a JSON array of records (top-level value: {_json_type(value)})")
    chars.take()
    index = 0
    if chars.skip_space() == "]":
        chars.take()
    else:
        while True:
            index += 1
            try:
                value = chars.value(index)
            except RecursionError:
                raise IngestError(path, chars.line, f"record {index}: {_TOO_DEEP}") from None
            if isinstance(value, _TooLong):
                yield BadRecord(
                    source,
                    index,
                    f"record is {value.size:,} characters or more, over the "
                    f"{limits().max_record:,}-character limit of one record (not read)",
                    kind="too-long",
                )
            else:
                yield _record_from_value(value, source, index, labeled)
            separator = chars.skip_space()
            chars.take()
            if separator == "]":
                break
            if separator != ",":
                raise IngestError(path, chars.line, f"invalid JSON: expected ',' or ']' after record {index}")
    if chars.skip_space() != "":
        raise IngestError(path, chars.line, "unexpected text after the JSON array")


class _TooLong(NamedTuple):
    """A JSON value over ``InputLimits.max_record`` characters: skipped, only its size is known."""

    size: int


_JSON_OUTSIDE = re.compile(r'[\[\]{}"]')  # what changes the scanner's state outside a string
_JSON_IN_STRING = re.compile(r'["\\]')  # ... inside a string
_JSON_ATOM_END = re.compile(r"[\s,\]}\[{:\"]")  # where a number or literal ends


def _read_text_blocks(path: str | PathLike) -> Iterator[tuple[str, int]]:
    """The text of a file in blocks of about ``_JSON_BLOCK`` bytes, with the line each block starts on (UTF-8
    checked as it goes: a bad byte is ``IngestError`` naming its line; UTF-16/32 refused; BOM dropped)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with open_input(path) as stream:
        first = True
        while True:
            try:
                data = stream.read(_JSON_BLOCK)
            except (OSError, EOFError, zlib.error) as exc:
                raise IngestError(path, line, f"cannot read file: {exc}") from None
            if first:
                _refuse_wide_encoding(path, data[: data.find(b"\n") + 1 or None])
                data = data.removeprefix(_UTF8_BOM)
                first = False
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                at = line + data.count(b"\n", 0, max(exc.start, 0))
                column = exc.start - data.rfind(b"\n", 0, max(exc.start, 0))
                byte = data[exc.start] if 0 <= exc.start < len(data) else 0
                raise IngestError(path, at, f"not valid UTF-8 (byte 0x{byte:02x} at column {column})") from None
            if text:
                yield text, line
                line += text.count("\n")
            if not data:
                return


class _JsonChars:
    """The text of a JSON file, read a block at a time, decoding one value at a time.

    The buffer holds only the text not yet decoded. A value spanning many blocks is scanned once (the scanner
    remembers where it stopped and its nesting depth), and decoded with ``raw_decode`` once its end is found:
    reading is linear in the file's size. A value over ``InputLimits.max_record`` characters is scanned to its end
    without being kept (``_TooLong``), so memory stays bounded.
    """

    def __init__(self, path: str | PathLike):
        self.path = path
        self.blocks = _read_text_blocks(path)
        self.buffer, self.pos, self.line, self.eof = "", 0, 1, False  # line: of the buffer's start
        self.cap = limits().max_record

    def _more(self, keep_from: int | None = None) -> bool:
        """Append the next block; the text before ``keep_from`` (default: ``pos``) is dropped."""
        if self.eof:
            return False
        block = next(self.blocks, None)
        if block is None:
            self.eof = True
            return False
        keep = self.pos if keep_from is None else keep_from
        self.line += self.buffer.count("\n", 0, keep)
        self.buffer = self.buffer[keep:] + block[0]
        self.pos -= keep
        return True

    def skip_space(self) -> str:
        """The next non-whitespace character ('' at the end), without consuming it."""
        while True:
            while self.pos < len(self.buffer) and self.buffer[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self._more():
                return ""

    def take(self) -> None:
        self.pos += 1

    def value(self, index: int) -> object:
        """Decode the next JSON value; ``_TooLong`` for one over the record limit (skipped)."""
        first = self.skip_space()
        start = self.pos  # the value's start, kept in the buffer while it is scanned
        scan = start  # how far the scanner got (relative to the buffer)
        depth, in_string, dropped = 0, False, 0
        if first not in '{["':  # a number or literal (or junk: raw_decode names it)
            while not (found := _JSON_ATOM_END.search(self.buffer, scan)) and not self.eof:
                scan = len(self.buffer)
                if scan - start > self.cap:
                    break
                self._more(keep_from=start)
                scan, start = scan - start, 0
            return self._decode(start, index)
        while True:
            found = (_JSON_IN_STRING if in_string else _JSON_OUTSIDE).search(self.buffer, scan)
            if found is None:
                scan = len(self.buffer)
            else:
                char = found.group()
                scan = found.end()
                if in_string:
                    if char == "\\":
                        if scan >= len(self.buffer):  # the escaped character is in the next block
                            scan -= 1
                            found = None
                        else:
                            scan += 1
                            continue
                    else:
                        in_string = False
                        if depth == 0:
                            break
                        continue
                elif char == '"':
                    in_string = True
                    continue
                else:
                    depth += 1 if char in "[{" else -1
                    if depth <= 0:
                        break
                    continue
            # the buffer ended inside the value: read on, dropping the value's text once it is over the limit
            too_long = dropped or scan - start > self.cap
            if too_long:
                dropped += scan - start
                start = scan
            if not self._more(keep_from=start):
                break  # the file ends inside the value: raw_decode names the error
            scan, start = scan - start, 0
        if dropped:
            self.line += self.buffer.count("\n", 0, scan)
            self.buffer, self.pos = self.buffer[scan:], 0
            return _TooLong(dropped + scan - start)
        if scan - start > self.cap:
            self.line += self.buffer.count("\n", 0, scan)
            size = scan - start
            self.buffer, self.pos = self.buffer[scan:], 0
            return _TooLong(size)
        return self._decode(start, index)

    def _decode(self, start: int, index: int) -> object:
        try:
            value, end = json.JSONDecoder().raw_decode(self.buffer, start)
        except json.JSONDecodeError as exc:
            line = self.line + self.buffer.count("\n", 0, exc.pos)
            raise IngestError(self.path, line, f"invalid JSON: {exc.msg} (record {index})") from None
        except ValueError as exc:  # an integer of more than 4,300 digits
            line = self.line + self.buffer.count("\n", 0, start)
            raise IngestError(self.path, line, f"invalid JSON: {exc} (record {index})") from None
        self.pos = end
        return value


def _parse_csv(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """CSV with a header row naming at least an 'abstract' column; blank lines are skipped."""
    source = display_name(path)
    cap = limits().max_record
    pending = 0  # characters read for the row being parsed

    def lines() -> Iterator[str]:
        nonlocal pending
        for lineno, text in _read_lines(path):
            if isinstance(text, _LongLine):
                raise IngestError(
                    path,
                    lineno,
                    f"line is {text.size:,} bytes, over the {_size(limits().max_line)} "
                    f"limit of one line (a CSV file cannot be read past it)",
                )
            pending += len(text) + 1
            if pending > cap:
                raise IngestError(
                    path,
                    start,
                    f"the record starting here is over {cap:,} characters (the limit"
                    f" of one record; a quote left open?)",
                )
            yield text + "\n"

    reader = csv.reader(lines())
    columns: list[str] | None = None
    while True:
        start = reader.line_num + 1
        pending = 0
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise IngestError(path, reader.line_num, f"malformed CSV: {exc}") from None
        if not any(cell.strip() for cell in row):
            continue
        if columns is None:
            columns = _csv_columns(path, start, row)
        elif len(row) != len(columns):
            yield BadRecord(source, start, f"row has {len(row)} fields but the header has {len(columns)}")
        else:
            yield record_from_mapping(dict(zip(columns, row)), source, start, labeled)


def _csv_columns(path: str | PathLike, line: int, header: list[str]) -> list[str]:
    """Normalised column names; raises ``IngestError`` when there is no 'abstract' column."""
    columns = [name.strip().lower() for name in header]
    if "abstract" not in columns:
        raise IngestError(path, line, f"CSV has no 'abstract' column (columns: {', '.join(header)})")
    return columns


# --------------------------------------------------------------------------- text layouts


class _Block(NamedTuple):
    """A run of non-blank lines: where it starts, its lines joined by spaces, how many lines, and the
    comment lines just above it or inside it (only when comments are recognised)."""

    line: int
    text: str
    lines: int
    comments: tuple[str, ...] = ()
    too_long: int = 0  # a block over the limits: its size (its text is dropped), else 0


def _iter_blocks(lines: Iterable[tuple[int, str]], comments: bool = False) -> Iterator[_Block]:
    """Group numbered lines into blocks separated by blank (whitespace-only) lines.

    With ``comments``, a line starting with ``#`` and a space is a comment: it is neither content nor
    a separator, and belongs to the block that follows it (or that it interrupts).
    A block over ``InputLimits.max_record`` characters (or holding a line over ``max_line``) keeps no text:
    its ``too_long`` is its size.
    """
    cap = limits().max_record
    start, parts, notes, size, count = 0, [], [], 0, 0
    for lineno, text in lines:
        if comments and _COMMENT_LINE.match(text):
            if len(notes) < 100:
                notes.append(text.strip()[:_MAX_LABEL_LINE])
            continue
        stripped = text.strip() if not isinstance(text, _LongLine) else text
        if stripped:
            start = start if count else lineno
            count += 1
            size += text.size if isinstance(text, _LongLine) else len(stripped) + 1
            if size > cap or isinstance(text, _LongLine):
                parts = []  # dropped: only its size is kept
            else:
                parts.append(stripped)
        elif count:
            yield _Block(start, " ".join(parts), count, tuple(notes), size if not parts else 0)
            parts, notes, size, count = [], [], 0, 0
    if count:
        yield _Block(start, " ".join(parts), count, tuple(notes), size if not parts else 0)


def _too_long_block(source: str, block: _Block) -> BadRecord:
    return BadRecord(
        source,
        block.line,
        f"paragraph is {block.too_long:,} characters or more, over the "
        f"{limits().max_record:,}-character limit of one record (not read)",
        kind="too-long",
    )


def _is_label_line(block: _Block) -> bool:
    """A single short line containing '·' or '->', or naming one of ``KNOWN_AREAS``."""
    text = block.text
    return (
        block.lines == 1
        and len(text) < _MAX_LABEL_LINE
        and (any(separator in text for separator in SEPARATORS) or text in KNOWN_AREAS)
    )


def _looks_like_authors(text: str) -> bool:
    """Comma-separated short names, optionally ending with the et-al marker ("等" or "et al.")."""
    names = _AUTHORS_MARKER.sub("", text).split(",")
    return all(_looks_like_name(name.strip()) for name in names)


def _looks_like_name(name: str) -> bool:
    words = name.split()
    return 0 < len(words) <= _MAX_AUTHOR_WORDS and len(name) <= _MAX_AUTHOR_CHARS and not _SENTENCE_END.search(name)


def _looks_like_header(text: str) -> bool:
    """A short first paragraph without a sentence end, e.g. "ICLR 2024 Papers"."""
    return len(text) < _MAX_HEADER and not _SENTENCE_END.search(text)


def _header_record(source: str, block: _Block) -> BadRecord:
    """The first paragraph of a text dump taken as the page's header: reported, never dropped silently."""
    return BadRecord(
        source,
        block.line,
        f"first paragraph {block.text[:60]!r} taken as the dump's header and "
        f"not labeled (if it is an abstract, add a header line above it)",
        kind="header",
    )


def _parse_text_labeled(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """Label line, optional authors block, then the abstract (one or more paragraphs); ``#`` comments."""
    source = display_name(path)
    blocks = _iter_blocks(_read_lines(path), comments=True)
    block = next(blocks, None)
    if block is not None and not block.too_long and not _is_label_line(block):
        yield _header_record(source, block)
        block = next(blocks, None)
    while block is not None:
        if block.too_long:
            yield _too_long_block(source, block)
            block = next(blocks, None)
            continue
        if not _is_label_line(block):
            yield BadRecord(source, block.line, "text block is not preceded by a label line")
            block = next(blocks, None)
            continue
        body, following = _take_until_label(blocks)
        yield _labeled_text_record(source, block, body, labeled)
        block = following


def _take_until_label(blocks: Iterator[_Block]) -> tuple[list[_Block], _Block | None]:
    """The blocks up to the next label line, and that label line (None at the end)."""
    body = []
    for block in blocks:
        if _is_label_line(block):
            return body, block
        body.append(block)
    return body, None


def _labeled_text_record(source: str, label: _Block, body: list[_Block], labeled: bool | None) -> Record | BadRecord:
    """The record for one label line and the blocks after it (the authors block kept apart)."""
    authors = None
    if body and _looks_like_authors(body[0].text):
        # the et-al marker ("等" or "et al.") is kept, in one spelling: "et al."
        authors = _AUTHORS_MARKER.sub(" et al.", body[0].text) if _AUTHORS_MARKER.search(body[0].text) else body[0].text
        body = body[1:]
    if not body:
        return BadRecord(source, label.line, f"label block {label.text!r} has no abstract")
    if too_long := next((block for block in body if block.too_long), None):
        return _too_long_block(source, too_long)
    abstract = " ".join(block.text for block in body)
    guesses = [c[len(SUGGESTED_MARKER) :].strip() for c in label.comments if c.startswith(SUGGESTED_MARKER)]
    return _make_record(
        source,
        label.line,
        abstract,
        labeled=labeled,
        label=label.text,
        authors=authors,
        guess=guesses[-1] if guesses else None,
    )


def _parse_text_unlabeled(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """One abstract per paragraph, after an optional short header line."""
    source = display_name(path)
    for index, block in enumerate(_iter_blocks(_read_lines(path))):
        if block.too_long:
            yield _too_long_block(source, block)
            continue
        if index == 0 and _looks_like_header(block.text):
            yield _header_record(source, block)
            continue
        yield _make_record(
            source, block.line, block.text, labeled=labeled, missing_label="no label (unlabeled text layout)"
        )


_PARSERS = {
    "jsonl": _parse_jsonl,
    "json": _parse_json_array,
    "csv": _parse_csv,
    "text-labeled": _parse_text_labeled,
    "text-unlabeled": _parse_text_unlabeled,
}


# --------------------------------------------------------------------------- datasets


@dataclass
class LoadSummary:
    """What ``load_dataset`` read, kept and skipped."""

    files: list[str] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    read: int = 0
    kept: int = 0
    duplicates: int = 0
    empty: int = 0
    conflicting_duplicates: int = 0  # duplicates whose label differs from the kept record's
    headers: int = 0  # first paragraphs of text dumps taken as a header
    unknown_areas: dict[str, int] = field(default_factory=dict)  # areas outside the known taxonomy
    suggested: int = 0  # records whose label is still the model's guess (skipped unless accepted)
    accepted_suggested: bool = False
    label_counts: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """Short report lines, e.g. "read 2,000 records from 1 file (jsonl)", "kept 1,996"."""
        formats = ", ".join(dict.fromkeys(self.formats))
        report = [
            f"read {_plural(self.read, 'record')} from {_plural(len(self.files), 'file')} ({formats})",
            f"kept {self.kept:,}",
        ]
        if self.duplicates:
            skipped = f"skipped {_plural(self.duplicates, 'duplicate')}"
            if self.conflicting_duplicates:
                skipped += f" ({self.conflicting_duplicates:,} with a different label)"
            report.append(skipped)
        if self.empty:
            report.append(f"skipped {_plural(self.empty, 'empty abstract')}")
        if self.headers:
            report.append(f"skipped {_plural(self.headers, 'header paragraph')}")
        if self.unknown_areas:
            areas = ", ".join(f"{area!r} ({count:,})" for area, count in list(self.unknown_areas.items())[:5])
            report.append(
                f"warning: {_plural(sum(self.unknown_areas.values()), 'record')} in "
                f"{_plural(len(self.unknown_areas), 'area')} outside the known taxonomy: {areas} "
                f"(check the spelling)"
            )
        if self.suggested and self.accepted_suggested:
            report.append(f"kept {_plural(self.suggested, 'model-suggested label')} (--accept-suggested)")
        elif self.suggested:
            report.append(
                f"skipped {_plural(self.suggested, 'model-suggested label')} (still the model's guess; "
                "--accept-suggested trains on them)"
            )
        if self.label_counts:
            report.append(_plural(len(self.label_counts), "distinct label"))
        return report


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def load_dataset(
    paths: str | PathLike | Iterable[str | PathLike],
    fmt: str | None = None,
    *,
    labeled: bool = True,
    accept_suggested: bool = False,
) -> tuple[list[Record], LoadSummary]:
    """Read training records from one or more files.

    An invalid record is fatal (``IngestError`` with its file, line and reason).  Empty abstracts
    and duplicates (same ``abstract_key`` as an earlier record, across all files) are skipped and
    counted; the first occurrence is kept.  Records whose label is still the model's guess
    (``Record.suggested``) are counted and skipped unless ``accept_suggested``.
    """
    path_list = [paths] if isinstance(paths, (str, PathLike)) else list(paths)
    if not path_list:
        raise ValueError("load_dataset needs at least one path")
    summary = LoadSummary(accepted_suggested=accept_suggested)
    records: list[Record] = []
    seen: dict[str, str | None] = {}  # make_id(abstract) -> label of the kept record
    for path in path_list:
        file_format = detect_format(path, fmt)
        summary.files.append(display_name(path))
        summary.formats.append(file_format)
        for item in iter_records(path, file_format, labeled=labeled):
            summary.read += 1
            record = _accept(item, summary, seen)
            if record is not None:
                records.append(record)
    summary.kept = len(records)
    summary.unknown_areas = dict(Counter(r.area for r in records if r.area and not is_known_area(r.area)).most_common())
    summary.label_counts = dict(Counter(r.label for r in records if r.label is not None).most_common())
    return records, summary


def _accept(item: Record | BadRecord, summary: LoadSummary, seen: dict[str, str | None]) -> Record | None:
    """The record to keep, or None after counting it as empty or duplicate; invalid is fatal."""
    if isinstance(item, BadRecord):
        if item.kind == "header":
            summary.headers += 1
            return None
        if item.kind != "empty":
            raise IngestError(item.source, item.line, item.reason)
        summary.empty += 1
        return None
    key = make_id(item.abstract)
    if key in seen:
        summary.duplicates += 1
        summary.conflicting_duplicates += seen[key] != item.label
        return None
    if item.suggested:
        summary.suggested += 1
        if not summary.accepted_suggested:
            return None  # not seen either: a human label of the same abstract, later, is kept
    seen[key] = item.label
    return item
