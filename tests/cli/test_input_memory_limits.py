"""Input read with bounded memory: gzip bombs and over-long lines, paragraphs and CSV records are one error row
(or one fatal error naming the line) and never read whole; decompressed bytes are counted, not compressed ones;
`label` ends a chunk once its records hold too much text and `suggest` keeps no over-long abstract in its pool."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

from papertrack.features.ingest import BadRecord, IngestError, Record, input_limits, iter_records
from tests.cli.peak_memory import read_in_child
from tests.serving.label_cli import ABSTRACT, label


def gz_of_one_line(path: Path, head: bytes, filler: bytes, size: int, tail: bytes) -> Path:
    """A gzip file of ``head + filler * (size / len(filler)) + tail`` written as it is compressed."""
    squash = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip container
    block = filler * ((1 << 20) // len(filler))
    with open(path, "wb") as out:
        out.write(squash.compress(head))
        for _ in range(size // len(block)):
            out.write(squash.compress(block))
        out.write(squash.compress(tail))
        out.write(squash.flush())
    return path


def good(n: int) -> bytes:
    return b"".join(
        json.dumps({"id": f"p{i}", "abstract": f"{ABSTRACT} Variant {i}."}).encode() + b"\n" for i in range(n)
    )


@pytest.mark.slow  # 1.3-1.7 s each (--durations)
@pytest.mark.parametrize("name", ["bomb.jsonl.gz", "bomb.txt.gz"])
def test_a_gzip_of_one_huge_line_is_one_error_row_in_bounded_memory(tmp_path, name):
    """305 kB of gzip holding one 300 MB line made `label` peak at 1.36 GB (the line was read whole)."""
    head = b'{"id": "big", "abstract": "' if "jsonl" in name else b"Papers\n\n"
    path = gz_of_one_line(tmp_path / name, good(2) + head, b"x", 150 << 20, b'"}\n' + good(1))
    assert path.stat().st_size < 1 << 20
    kinds, peak = read_in_child(path)
    assert kinds[-2:] == ["too-long", "ok"] and kinds.count("too-long") == 1
    assert peak < 120, f"peak {peak} MiB"


def test_an_over_long_line_says_its_size_and_the_limit(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(good(1) + b'{"abstract": "' + b"y" * 3000 + b'"}\n' + good(1))
    with input_limits(max_line=1000):
        first, long, last = iter_records(path)
    assert isinstance(first, Record) and isinstance(last, Record)
    assert isinstance(long, BadRecord) and long.kind == "too-long" and long.line == 2
    assert "3,017 bytes, over the 1,000 bytes limit of one line" in long.reason


def test_decompressed_bytes_are_counted_not_compressed_ones(tmp_path):
    path = tmp_path / "many.jsonl.gz"
    path.write_bytes(gzip.compress(good(20_000)))
    with input_limits(max_bytes=1 << 20), pytest.raises(IngestError) as caught:
        list(iter_records(path))
    assert caught.value.path == str(path) and "more than 1 MiB of text (once decompressed)" in caught.value.message


def test_a_long_paragraph_of_short_lines_is_one_error_row(tmp_path):
    path = tmp_path / "dump.txt"
    path.write_text(
        "Papers\n\n"
        + "A short first abstract about graphs and their nodes.\n\n"
        + "word " * 50
        + "\n" * 1
        + ("long line of words here\n" * 2000)
        + "\n"
        + "The last abstract, about optimisation of deep networks.\n"
    )
    with input_limits(max_record=10_000):
        kinds = [getattr(item, "kind", "ok") for item in iter_records(path)]
    assert kinds == ["header", "ok", "too-long", "ok"]


def test_a_csv_record_over_the_limit_is_fatal_naming_its_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('abstract\n"first"\n"' + "open quote\n" * 5000 + '"\n"last"\n')
    with input_limits(max_record=10_000), pytest.raises(IngestError) as caught:
        list(iter_records(path))
    assert caught.value.line == 3 and "over 10,000 characters" in caught.value.message
    assert "the limit of one record" in caught.value.message


def test_label_on_a_gzip_bomb_writes_one_error_row(tmp_path, fake_model):
    dump = gz_of_one_line(tmp_path / "bomb.jsonl.gz", good(1) + b'{"abstract": "', b"z", 8 << 20, b'"}\n')
    out = tmp_path / "out.jsonl"
    result = label(str(dump), "-o", str(out))
    assert result.exit_code == 3, result.output
    (row,) = [json.loads(line) for line in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    assert row["kind"] == "too-long" and row["line"] == 2 and "limit of one line" in row["reason"]


def test_parse_dump_counts_decompressed_bytes():
    from papertrack.serving.http.page import read_dump

    bomb = gzip.compress(good(1) + b'{"abstract": "' + b"q" * (120 << 20) + b'"}\n')
    assert len(bomb) < 1 << 20
    with pytest.raises(IngestError) as caught:
        read_dump(bomb, "bomb.jsonl.gz")
    assert "once decompressed" in caught.value.message


@pytest.mark.usefixtures("fake_model")
def test_a_chunk_ends_once_its_records_hold_too_much_text(tmp_path, monkeypatch):
    """2,000 records of up to 1 MiB each (over-long abstracts, all rejected) were held at once: ~2 GiB."""
    import papertrack.serving.batch.labeler.run as run
    from tests.fake_backend import FakeBackend

    sizes = []
    real_label = FakeBackend.label
    monkeypatch.setattr(
        FakeBackend, "label", lambda self, records, k: sizes.append(len(records)) or real_label(self, records, k)
    )  # noqa: E501
    monkeypatch.setattr(run, "CHUNK_CHARS", 2_500)
    source = tmp_path / "long.jsonl"
    source.write_text("".join(json.dumps({"abstract": f"{i} " + "w" * 1_000}) + "\n" for i in range(10)))
    result = label(str(source), "-o", str(tmp_path / "out.jsonl"), "--chunk-size", "100")
    assert result.exit_code == 0, result.output
    assert sizes == [3, 3, 3, 1]  # 3 × ~1,000 characters reach 2,500
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 10


def test_suggest_keeps_no_over_long_abstract_in_its_pool(tmp_path):
    """The pool held every record's text, however long (up to the 1 MiB record limit); label and the service
    reject an abstract over 20,000 characters, and so does suggest now."""
    from papertrack.serving.batch.suggest import read_pool

    source = tmp_path / "d.jsonl"
    long = {"id": "long", "abstract": " ".join(["graph"] * 5_000)}  # 29,999 characters
    source.write_text("".join(json.dumps(r) + "\n" for r in [{"id": "a", "abstract": ABSTRACT}, long]))
    pool = read_pool([source])
    assert [r.id for r in pool.records] == ["a"]
    (bad,) = pool.bad
    assert (bad.line, bad.kind, bad.id) == (2, "rejected", "long")
    assert bad.reason == (
        "abstract has 29,999 characters; at most 20,000 are accepted: paste the abstract, not the whole paper"
    )
