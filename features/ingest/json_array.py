"""The JSON-array reader: ``[{...}, {...}]`` streamed element by element with bounded memory.

The tokenizer is hand-rolled on purpose: it finds each element's end with a few regular expressions (linear in
the file's size, a value spanning many blocks is scanned once) and hands the element to the standard library's
``raw_decode``, so messages are ``json``'s own ("Expecting ',' delimiter ...") with the file's line, and an
element over ``InputLimits.max_record`` characters is skipped without being kept. A streaming library such as
``ijson`` builds every element whole before it can be measured and words its errors differently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from os import PathLike
from typing import NamedTuple

from papertrack.features.ingest.decoding import limits, read_text_blocks
from papertrack.features.ingest.records import (
    TOO_DEEP,
    BadRecord,
    IngestError,
    Record,
    display_name,
    json_type,
    record_from_value,
)

RECORD_LISTS = ("notes",)  # an object's field that holds the records (OpenReview: ``{"notes": [...]}``)


def read_json_array(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
    """A JSON array of objects, streamed element by element; ``line`` is the file line where a record starts.

    An object holding the array under ``"notes"`` (an OpenReview export: ``{"notes": [...], "count": 200}``) is
    read the same way. Any other top-level value (one object, a string, ...) is a fatal error: it is not a list of
    records.
    """
    source = display_name(path)
    for line, index, value in iter_json_values(path):
        if isinstance(value, _TooLong):
            yield BadRecord(
                source,
                line,
                f"record {index} is {value.size:,} characters or more, over the "
                f"{limits().max_record:,}-character limit of one record (not read)",
                kind="too-long",
            )
        else:
            yield record_from_value(value, source, line, labeled)


def iter_json_values(path: str | PathLike) -> Iterator[tuple[int, int, object]]:
    """(file line where it starts, its 1-based index, the decoded value or ``_TooLong``) for each element of the
    file's array, or of the array under ``"notes"`` when the file holds one object."""
    chars = _JsonChars(path)
    first = chars.skip_space()
    if first == "{":
        yield from _wrapped_records(path, chars)
        return
    if first != "[":
        value = chars.value(1)  # raises for invalid JSON
        raise IngestError(path, 1, f"expected a JSON array of records (top-level value: {json_type(value)})")
    yield from _array(path, chars)
    if chars.skip_space() != "":
        raise IngestError(path, chars.line_at(chars.pos), "unexpected text after the JSON array")


def _array(path: str | PathLike, chars: _JsonChars) -> Iterator[tuple[int, int, object]]:
    """The elements of the array starting at the next character ('['), consumed up to its ']'."""
    chars.take()
    index = 0
    if chars.skip_space() == "]":
        chars.take()
        return
    while True:
        index += 1
        chars.skip_space()
        line = chars.line_at(chars.pos)  # where the record starts
        try:
            value = chars.value(index)
        except RecursionError:
            raise IngestError(path, line, f"record {index}: {TOO_DEEP}") from None
        yield line, index, value
        separator = chars.skip_space()
        chars.take()
        if separator == "]":
            return
        if separator != ",":
            raise IngestError(path, chars.line_at(chars.pos), f"invalid JSON: expected ',' or ']' after record {index}")


def _wrapped_records(path: str | PathLike, chars: _JsonChars) -> Iterator[tuple[int, int, object]]:
    """One top-level object: the records of its ``"notes"`` array (its other fields skipped), streamed; an
    object without one is a fatal error naming its keys."""
    chars.take()
    keys: list[str] = []
    read = False
    while (char := chars.skip_space()) != "}":
        if char != '"':
            chars.value(1)  # raises: invalid JSON, with the line
            raise IngestError(path, chars.line_at(chars.pos), "invalid JSON: expected a field name")
        key = chars.value(1)
        if chars.skip_space() != ":":
            raise IngestError(path, chars.line_at(chars.pos), f"invalid JSON: expected ':' after {key!r}")
        chars.take()
        keys.append(str(key))
        if str(key).lower() in RECORD_LISTS and not read and chars.skip_space() == "[":
            read = True
            yield from _array(path, chars)
        else:
            chars.value(1)
        separator = chars.skip_space()
        if separator == ",":
            chars.take()
        elif separator != "}":
            raise IngestError(path, chars.line_at(chars.pos), "invalid JSON: expected ',' or '}' in the object")
    chars.take()
    if chars.skip_space() != "":
        raise IngestError(path, chars.line_at(chars.pos), "unexpected text after the JSON object")
    if not read:
        shown = ", ".join(repr(k) for k in keys[:8])
        raise IngestError(
            path,
            1,
            f'expected a JSON array of records, or an object with a "notes" array (an OpenReview export); the '
            f"file holds one JSON object (keys: {shown or 'none'}). Put the records in an array, or name the file "
            f".jsonl for one object per line",
        )


class _TooLong(NamedTuple):
    """A JSON value over ``InputLimits.max_record`` characters: skipped, only its size is known."""

    size: int


_JSON_OUTSIDE = re.compile(r'[\[\]{}"]')  # what changes the scanner's state outside a string
_JSON_IN_STRING = re.compile(r'["\\]')  # ... inside a string
_JSON_ATOM_END = re.compile(r"[\s,\]}\[{:\"]")  # where a number or literal ends


class _JsonChars:
    """The text of a JSON file, read a block at a time, decoding one value at a time.

    The buffer holds only the text not yet decoded. A value spanning many blocks is scanned once (the scanner
    remembers where it stopped and its nesting depth), and decoded with ``raw_decode`` once its end is found:
    reading is linear in the file's size. A value over ``InputLimits.max_record`` characters is scanned to its end
    without being kept (``_TooLong``), so memory stays bounded.
    """

    def __init__(self, path: str | PathLike):
        self.path = path
        self.blocks = read_text_blocks(path)
        self.buffer, self.pos, self.line, self.eof = "", 0, 1, False  # line: of the buffer's start
        self.cap = limits().max_record
        self.mark = (0, 1)  # (a position in the buffer, its line): where :meth:`line_at` counted up to

    def line_at(self, pos: int) -> int:
        """The file line of the buffer's position ``pos``, counted on from the last position asked about."""
        mark_pos, mark_line = self.mark
        if pos < mark_pos or mark_pos > len(self.buffer):
            mark_pos, mark_line = 0, self.line
        mark_line += self.buffer.count("\n", mark_pos, pos)
        self.mark = (pos, mark_line)
        return mark_line

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
        self.mark = (0, self.line)
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
            self.buffer, self.pos, self.mark = self.buffer[scan:], 0, (0, self.line)
            return _TooLong(dropped + scan - start)
        if scan - start > self.cap:
            self.line += self.buffer.count("\n", 0, scan)
            size = scan - start
            self.buffer, self.pos, self.mark = self.buffer[scan:], 0, (0, self.line)
            return _TooLong(size)
        return self._decode(start, index)

    def _decode(self, start: int, index: int) -> object:
        try:
            value, end = json.JSONDecoder().raw_decode(self.buffer, start)
        except json.JSONDecodeError as exc:
            line = self.line_at(exc.pos)
            raise IngestError(self.path, line, f"invalid JSON: {exc.msg} (record {index})") from None
        except ValueError as exc:  # an integer of more than 4,300 digits
            line = self.line_at(start)
            raise IngestError(self.path, line, f"invalid JSON: {exc} (record {index})") from None
        self.pos = end
        return value
