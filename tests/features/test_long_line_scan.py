"""The Spark engine finds a dump's over-long lines before Spark reads it (``scan_long_lines``, block by block);
they must be exactly the lines the local engine's reader (``read_line_bytes``/``read_lines``) calls too long,
with the same sizes: at the limit, one byte over, CRLF, no final LF, a BOM, gzip, lines crossing blocks."""

from __future__ import annotations

import gzip
import random

import pytest

from papertrack.features.ingest import IngestError, input_limits
from papertrack.features.ingest.decoding import UTF8_BOM, read_line_bytes, read_lines, scan_long_lines


def long_lines_read(path) -> list[tuple[int, int]]:
    return [(line, size) for line, _, size in read_line_bytes(path) if size is not None]


@pytest.mark.parametrize("cap", [8, 64])
@pytest.mark.parametrize("seed", range(30))
def test_the_scan_finds_the_lines_the_reader_calls_too_long(tmp_path, cap, seed):
    rng = random.Random(seed)
    lengths = [rng.choice([0, 1, cap - 1, cap, cap + 1, cap + 2, 3 * cap, rng.randint(0, 4 * cap)]) for _ in range(40)]
    lines = [bytes(rng.choice(b"ab{}\r") for _ in range(n)) for n in lengths]
    data = b"\n".join(lines) + rng.choice([b"", b"\n", b"\r\n"])
    if seed % 3 == 0:
        data = UTF8_BOM + data
    path = tmp_path / ("d.jsonl.gz" if seed % 2 else "d.jsonl")
    path.write_bytes(gzip.compress(data) if seed % 2 else data)
    with input_limits(max_line=cap):
        expected = long_lines_read(path)
        assert scan_long_lines(path) == expected


def test_a_line_of_exactly_the_limit_is_not_too_long_one_more_byte_is(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"x" * 16 + b"\n" + b"y" * 17 + b"\r\n" + b"z" * 17)
    with input_limits(max_line=16):
        assert scan_long_lines(path) == [(2, 19), (3, 17)]
        assert [type(text).__name__ for _, text in read_lines(path)] == ["str", "LongLine", "LongLine"]


def test_a_bom_does_not_count_in_the_first_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(UTF8_BOM + b"x" * 16 + b"\n" + b"ok\n")
    with input_limits(max_line=16):
        assert scan_long_lines(path) == [] == long_lines_read(path)
        assert [text for _, text in read_lines(path)] == ["x" * 16, "ok"]


def test_the_scan_stops_at_the_decompressed_size_limit_like_the_reader(tmp_path):
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"abstract": "a"}\n' * 10_000))
    with input_limits(max_bytes=50_000), pytest.raises(IngestError, match="more than 50,000 bytes of text"):
        scan_long_lines(path)
