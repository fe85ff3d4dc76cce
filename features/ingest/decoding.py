"""The bytes and text of an input file: gzip recognised by its magic bytes, the decompressed size capped
(``InputLimits.max_bytes``), a UTF-8 BOM dropped, UTF-16/UTF-32 refused with the command that converts it,
UTF-8 checked line by line (a bad byte is named with its line and column), over-long lines skipped in blocks;
what one input may hold (``InputLimits``), the limits in force and how to change them for a block.

Every function here raises ``IngestError`` for a problem with the whole file.
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import shlex
import zlib
from collections.abc import Generator, Iterator
from contextlib import closing, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path

from papertrack.features.ingest.records import STDIN_NAME, IngestError, display_name


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


_GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
# byte-order marks of the encodings people save "Unicode text" in (UTF-32 first: its LE mark starts like UTF-16's)
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
HEAD_CHARS = 64 * 1024  # how much text format detection looks at
_BLOCK = 1 << 16  # bytes read at a time when streaming a file in blocks (a JSON array, an over-long line)
_LINE_SCAN_BLOCK = 1 << 20  # bytes read at a time by scan_long_lines (at most max_line + 1)


def _check_file(path: str | PathLike) -> None:
    """Raise ``IngestError`` unless ``path`` is an existing regular file."""
    p = Path(path)
    if not p.exists():
        raise IngestError(path, None, "file not found")
    if not p.is_file():
        raise IngestError(path, None, "not a regular file")


@contextmanager
def open_input(path: str | PathLike) -> Iterator[_Counted]:
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

    def __init__(self, stream: io.BufferedIOBase, path: str | PathLike, cap: int):
        self.stream, self.path, self.cap, self.count = stream, path, cap, 0

    def _counted(self, data: bytes) -> bytes:
        self.count += len(data)
        if self.count > self.cap:
            hint = " (or set PAPERTRACK_MAX_INPUT_BYTES)" if self.cap == InputLimits().max_bytes else ""
            raise IngestError(
                self.path, None, f"more than {size_text(self.cap)} of text (once decompressed); split the file{hint}"
            )
        return data

    def read(self, size: int = -1) -> bytes:
        return self._counted(self.stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._counted(self.stream.readline(size))

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


class LongLine(str):
    """A line over ``max_line`` bytes: its first characters only (enough to detect the layout); ``size`` is the
    line's length in bytes (its end was read and dropped without being kept)."""

    size: int

    def __new__(cls, head: str, size: int) -> LongLine:
        self = super().__new__(cls, head)
        self.size = size
        return self


def read_lines(path: str | PathLike) -> Generator[tuple[int, str], None, None]:
    """Yield ``(line_number, text)`` for each line, without its line ending (LF or CRLF).

    The file is opened with :func:`open_input` (gzip or not), a leading UTF-8 BOM is dropped, and each
    line is decoded separately so that a non-UTF-8 byte is reported with its line number.
    A line over ``InputLimits.max_line`` bytes is yielded as a ``LongLine`` holding its first characters
    only: the rest is read in blocks and dropped, so memory stays bounded whatever the line's length.
    """
    for lineno, data, size in read_line_bytes(path):
        if size is not None:
            yield lineno, LongLine(data.decode("utf-8", "ignore"), size)
        else:
            yield lineno, decode_line(path, lineno, data).rstrip("\r\n")


def read_line_bytes(path: str | PathLike) -> Generator[tuple[int, bytes, int | None], None, None]:
    """Yield ``(line_number, data, size)`` for each line: its bytes with the line ending (LF; a CR before it is
    kept) and ``size`` None, or, for a line over ``InputLimits.max_line`` bytes (not counting its LF), its first
    ``HEAD_CHARS`` bytes and ``size`` = its length in bytes (LF included; the rest was read in blocks and
    dropped). A leading UTF-8 BOM is dropped; a UTF-16/UTF-32 file is refused (``IngestError``).

    The one rule of an over-long line: :func:`read_lines` decodes these lines, the Spark engine hands them to
    its executors undecoded, and :func:`scan_long_lines` finds the same long lines at block speed.
    """
    cap = limits().max_line
    with open_input(path) as stream:
        lineno = 0
        try:
            # line 1 may start with a 3-byte BOM, which does not count
            while data := stream.readline(cap + 1 + (len(UTF8_BOM) if lineno == 0 else 0)):
                lineno += 1
                if lineno == 1:
                    _refuse_wide_encoding(path, data)
                    data = data.removeprefix(UTF8_BOM)
                complete = data.endswith(b"\n")
                if len(data) - complete > cap:
                    size = len(data) + (0 if complete else _skip_line(stream))
                    yield lineno, data[:HEAD_CHARS], size
                    continue
                yield lineno, data, None
        except (OSError, EOFError, zlib.error) as exc:
            raise IngestError(path, lineno + 1, f"cannot read file: {exc}") from None


def scan_long_lines(path: str | PathLike) -> list[tuple[int, int]]:
    """``(line_number, size)`` of every line :func:`read_line_bytes` finds over ``InputLimits.max_line`` bytes,
    found without splitting the file into lines: blocks of at most ``max_line + 1`` bytes are searched for
    their first and last LF (so only a line that crosses a block boundary can be too long), at the speed of
    reading (and decompressing) the file. The same ``IngestError`` as reading it: over ``max_bytes`` once
    decompressed, a broken gzip stream, UTF-16/32. Memory: one block, and the list (at most
    ``max_bytes / max_line`` entries)."""
    cap = limits().max_line
    block_size = min(_LINE_SCAN_BLOCK, cap + 1)
    found: list[tuple[int, int]] = []
    newlines = 0  # LFs before the current line
    start = 0  # where the current line starts (bytes after the BOM)
    offset = 0  # bytes read (after the BOM)
    with open_input(path) as stream:
        try:
            first = True
            while block := stream.read(block_size):
                if first:
                    first = False
                    block = _first_block(path, block)
                end = block.find(b"\n")
                if end < 0:
                    offset += len(block)
                    continue
                if offset + end - start > cap:  # the line ending in this block (not counting its LF)
                    found.append((newlines + 1, offset + end - start + 1))
                newlines += block.count(b"\n")
                start = offset + block.rfind(b"\n") + 1
                offset += len(block)
        except (OSError, EOFError, zlib.error) as exc:
            raise IngestError(path, newlines + 1, f"cannot read file: {exc}") from None
    if offset - start > cap:  # the last line, without a LF
        found.append((newlines + 1, offset - start))
    return found


def _first_block(path: str | PathLike, block: bytes) -> bytes:
    """The first block without its BOM, the wide encodings refused on its first line (as :func:`read_lines`)."""
    end = block.find(b"\n")
    _refuse_wide_encoding(path, block[: end + 1] if end >= 0 else block)
    return block.removeprefix(UTF8_BOM)


def _skip_line(stream: _Counted) -> int:
    """Read and drop the rest of the current line (in blocks); how many bytes that was."""
    skipped = 0
    while block := stream.readline(_BLOCK):
        skipped += len(block)
        if block.endswith(b"\n"):
            break
    return skipped


# documents that are not text, by their first bytes: what they are and what to do instead
_ZIP_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Excel 97-2003 (.xls), old Word (.doc)
_SPREADSHEETS = (".xlsx", ".xlsm", ".xls", ".ods", ".numbers")
_EXPORT_CSV = (
    'export the sheet as CSV (UTF-8) and give that file (the abstracts in a column named "abstract", or name '
    "their column with --abstract-column)"
)


def _refuse_document(path: str | PathLike, first_bytes: bytes) -> None:
    """``IngestError`` for a spreadsheet, a ZIP archive or a PDF (known by their first bytes), saying what to give
    instead, rather than "not valid UTF-8 (byte 0x86 at column 13)"."""
    suffix = Path(display_name(path).lower().removesuffix(".gz")).suffix
    if first_bytes.startswith(_ZIP_MAGIC):
        if suffix in _SPREADSHEETS or b"xl/" in first_bytes[:4096] or b"[Content_Types]" in first_bytes[:4096]:
            what = "a spreadsheet (Excel/ODS)" if suffix != ".docx" else "a Word document"
            fix = _EXPORT_CSV if suffix != ".docx" else "save it as plain text, one abstract per paragraph"
            raise IngestError(path, None, f"{what}, not text: {fix}")
        raise IngestError(path, None, "a ZIP archive, not text: unzip it and give the files inside")
    if first_bytes.startswith(_OLE_MAGIC):
        raise IngestError(path, None, f"an Excel 97-2003 or old Office file, not text: {_EXPORT_CSV}")
    if first_bytes.startswith(b"%PDF-"):
        raise IngestError(
            path, None, "a PDF, not text: paste the abstract (not the whole paper) into a text file and give that"
        )


def _refuse_wide_encoding(path: str | PathLike, first_line: bytes) -> None:
    """``IngestError`` for a UTF-16/UTF-32 file (a byte-order mark, or NUL bytes where plain text in those
    encodings has them), saying how to convert it, instead of "not valid UTF-8 (byte 0xff ...)"; and for a
    spreadsheet, archive or PDF (:func:`_refuse_document`)."""
    _refuse_document(path, first_line)
    encoding = next((name for bom, name in _WIDE_BOMS if first_line.startswith(bom)), None)
    sample = first_line[:4096]
    if sample and not sample.strip(b"\x00"):  # a disk image, /dev/zero: no text at all, in any encoding
        raise IngestError(
            path, None, f"its first {len(sample):,} bytes are all zero (NUL bytes): not text; is it the right file?"
        )
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


def decode_line(path: str | PathLike, lineno: int, data: bytes) -> str:
    """Decode one line as UTF-8 or raise ``IngestError`` naming the offending byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = data[exc.start]
        message = f"not valid UTF-8 (byte 0x{byte:02x} at column {exc.start + 1})"
        raise IngestError(path, lineno, message) from None


def read_head(path: str | PathLike) -> list[str]:
    """The first lines of a file (about ``HEAD_CHARS`` characters); raises if the file is empty."""
    head: list[str] = []
    size = 0
    has_content = False
    with closing(read_lines(path)) as lines:
        for _, text in lines:
            head.append(text)
            size += len(text) + 1
            has_content = has_content or bool(text.strip()) or isinstance(text, LongLine)
            if size >= HEAD_CHARS and has_content:
                break
    if not has_content:
        raise IngestError(path, None, "file is empty")
    return head


def read_text_blocks(path: str | PathLike) -> Iterator[tuple[str, int]]:
    """The text of a file in blocks of about 64 KiB, with the line each block starts on (UTF-8 checked as it
    goes: a bad byte is ``IngestError`` naming its line; UTF-16/32 refused; BOM dropped)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with open_input(path) as stream:
        first = True
        while True:
            try:
                data = stream.read(_BLOCK)
            except (OSError, EOFError, zlib.error) as exc:
                raise IngestError(path, line, f"cannot read file: {exc}") from None
            if first:
                _refuse_wide_encoding(path, data[: data.find(b"\n") + 1 or None])
                data = data.removeprefix(UTF8_BOM)
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
