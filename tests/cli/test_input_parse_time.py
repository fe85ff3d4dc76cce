"""Input read in bounded time: the JSON array reader is linear in a record that spans many lines (and still reads
every shape of array), and a huge integer is an error row, not a traceback."""

from __future__ import annotations

import json
import time

import pytest

from papertrack.features.ingest import IngestError, Record, iter_records
from tests.serving.label_cli import ABSTRACT


def spread_array(n_records: int, lines_per_record: int) -> bytes:
    """A JSON array whose records each span many lines (a pretty-printed list of authors)."""
    records = []
    for i in range(n_records):
        authors = ",\n".join(f'    "Author Number {j} of paper {i}"' for j in range(lines_per_record))
        records.append(f'{{"id": "p{i}", "abstract": "{ABSTRACT} Variant {i}.",\n "authors": [\n{authors}\n]}}')
    return ("[\n" + ",\n".join(records) + "\n]\n").encode()


def test_a_json_array_record_spanning_many_lines_is_read_in_linear_time(tmp_path):
    """1.5 MB took 2.3 s and 6 MB 19.8 s: each 64 kB block re-parsed the record from its start. (CPU time: a
    loaded machine's other processes do not count.)"""
    path = tmp_path / "d.json"
    path.write_bytes(spread_array(1, 25_000))  # ~0.9 MB: one record, under the record limit
    assert 800_000 < path.stat().st_size < 1 << 20
    started = time.process_time()
    (record,) = iter_records(path)
    assert time.process_time() - started < 0.5
    assert isinstance(record, Record) and record.authors.count("Author Number") == 25_000
    path.write_bytes(spread_array(1, 170_000))  # 6 MB: over the record limit, skipped as it is scanned
    started = time.process_time()
    (skipped,) = iter_records(path)
    assert time.process_time() - started < 2
    assert skipped.kind == "too-long" and "limit of one record" in skipped.reason


def test_the_json_array_reader_still_reads_every_shape(tmp_path):
    path = tmp_path / "d.json"
    tricky = [
        {"abstract": f'{ABSTRACT} quote " brace {{ ] bracket \\ back {i}', "n": i, "x": [1, 2.5e3, None, True]}
        for i in range(400)
    ]
    path.write_text(json.dumps(tricky, indent=1))
    assert [r.abstract for r in iter_records(path)] == [t["abstract"] for t in tricky]
    path.write_text(json.dumps(tricky, separators=(",", ":")))  # one line of ~60 kB, then more
    assert len(list(iter_records(path))) == 400
    path.write_text('[{"abstract": "' + "é" * 70_000 + '"}, 17, "text"]')  # UTF-8 cut across blocks
    first, number, text = iter_records(path)
    assert len(first.abstract) == 70_000 and "number" in number.reason and "string" in text.reason
    path.write_text('[{"abstract": "a b c"}, {"abstract": "unterminated')
    with pytest.raises(IngestError, match="invalid JSON"):
        list(iter_records(path))
    path.write_bytes(b'[\n{"abstract": "ok"},\n{"abstract": "caf\xe9"}]')
    with pytest.raises(IngestError) as caught:
        list(iter_records(path))
    assert caught.value.line == 3 and "not valid UTF-8 (byte 0xe9" in caught.value.message


def test_a_huge_integer_is_an_error_row_not_a_traceback(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"abstract": "numbers", "n": ' + "9" * 5000 + "}\n")
    (bad,) = iter_records(path)
    assert bad.kind == "invalid" and "4300" in bad.reason
