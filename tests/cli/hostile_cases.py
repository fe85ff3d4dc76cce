"""What the cases of the hostile-input corpus (``tests/hostile_corpus.py``) must come to in `papertrack label`
(and `suggest`, which reads the same way), and the ceilings every case is held to: memory growth and seconds."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_INPUT_MIB = 128  # PAPERTRACK_MAX_INPUT_BYTES for the CLI: between the one-line bomb (64) and the other (160)
GROWTH_MIB = 100  # a case may grow the process by this much over what it held before (bounded reading)
SECONDS = 60.0  # time ceiling of a case (a loaded 2-core machine; quiet: a few seconds)
SLOW_SECONDS = {"bomb-one-line.jsonl.gz": 120.0, "bomb-many-lines.jsonl.gz": 120.0}  # 64 / 160 MiB to inflate
# spread-records.json: 13 MB of records spanning many lines took minutes when each 64 kB block re-parsed the
# record from its start (6 MB: 19.8 s quiet); read once in linear time it is seconds
LINEAR_SECONDS = 45.0

# record 9 of spread-records.json (id spread-8, ~6 MB) is too long; its error row names the file line it starts on
SPREAD_9 = '{"id": "spread-8"'  # the 9th record, ~6 MB


def file_lines(expected: list[tuple[int | str, str]], path: Path) -> list[tuple[int, str]]:
    """``expected`` with a record's marker (such as SPREAD_9) replaced by the file line the record starts on."""
    text = path.read_text(encoding="utf-8") if any(isinstance(line, str) for line, _ in expected) else ""
    return [
        (text[: text.index(line)].count("\n") + 1 if isinstance(line, str) else line, kind) for line, kind in expected
    ]


# what `label` must do with each case: exit code, and (line, kind) of its error rows or the fatal message
LABEL = {
    "bomb-one-line.jsonl.gz": (3, [(3, "too-long")]),
    "bomb-many-lines.jsonl.gz": (2, f"more than {MAX_INPUT_MIB} MiB of text (once decompressed); split the file"),
    "lone-surrogates.jsonl": (3, [(2, "invalid"), (3, "invalid"), (4, "invalid")]),
    "utf16-bom.jsonl": (2, "the file is UTF-16 text, not UTF-8; convert it to UTF-8: iconv -f UTF-16 -t UTF-8"),
    "utf16-no-bom.txt": (2, "the file is UTF-16 text, not UTF-8; convert it to UTF-8: iconv -f UTF-16 -t UTF-8"),
    "wide-abstract.jsonl": (3, [(2, "too-long")]),
    "wide-title.jsonl": (3, [(2, "too-long")]),
    "spread-records.json": (3, [(SPREAD_9, "too-long")]),
    "csv-injection.csv": (0, []),
    "many-labels.jsonl": (0, []),
    "nul-bytes.jsonl": (3, [(2, "invalid"), (4, "empty")]),
    "invalid-json.jsonl": (3, [(line, "invalid") for line in range(2, 9)]),
    "pruned-vocabulary.jsonl": (0, []),
    "long-paragraph.txt": (3, [(1, "header"), (5, "too-long")]),
    "open-quote.csv": (2, ":3: the record starting here is over 1,048,576 characters"),
    "one-object.json": (2, ':1: expected a JSON array of records, or an object with a "notes" array'),
    "empty.jsonl": (2, ": file is empty"),
    # round three (issue 26; tests/cli/test_input_edge_cases.py has the rest)
    "spaces-authors.txt": (3, [(7, "rejected")]),  # its abstract: the 100,000 spaces, over 20,000 characters
    "long-record.txt.gz": (3, [(7, "too-long")]),
    "zeros.txt": (2, ": its first 4,096 bytes are all zero (NUL bytes): not text"),
    "venues.jsonl": (0, []),
}
