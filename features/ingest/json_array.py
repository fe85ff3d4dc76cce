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


def read_json_array(path: str | PathLike, labeled: bool | None) -> Iterator[Record | BadRecord]:
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
        raise IngestError(path, 1, f"expected a JSON array of records (top-level value: {json_type(value)})")
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
                raise IngestError(path, chars.line, f"record {index}: {TOO_DEEP}") from None
            if isinstance(value, _TooLong):
                yield BadRecord(
                    source,
                    index,
                    f"record is {value.size:,} characters or more, over the "
                    f"{limits().max_record:,}-character limit of one record (not read)",
                    kind="too-long",
                )
            else:
                yield record_from_value(value, source, index, labeled)
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
