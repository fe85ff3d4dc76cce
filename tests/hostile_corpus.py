"""Write the hostile-input corpus: one file per case of what broke papertrack's readers and writers (issue 19),
generated (nothing binary in the repository) and reusable by hand or by ``tests/cli/test_hostile_corpus_*.py``.

    .venv/bin/python tests/hostile_corpus.py DIR [--bomb-line-mib 64] [--bomb-total-mib 160]

DIR gets the case files and ``MANIFEST.json`` (file → what it holds; for the planted-symlink case also the
output names whose temporary files are links). Then, e.g.::

    PAPERTRACK_MAX_INPUT_BYTES=$((128 << 20)) papertrack label DIR/bomb-many-lines.jsonl.gz -o /tmp/o.jsonl
    papertrack train --data DIR/many-labels.jsonl -c tfidf-word-cnb
    curl -s -X POST 'http://127.0.0.1:3000/parse_dump?filename=nul-bytes.jsonl' --data-binary @DIR/nul-bytes.jsonl

The bombs are small on disk (a few hundred kB) and big once decompressed: ``--bomb-line-mib`` is the one huge line
(over the 1 MiB line limit, under ``PAPERTRACK_MAX_INPUT_BYTES`` as the test sets it), ``--bomb-total-mib`` the
text of the many-lines bomb (over it). What papertrack does with each case is in README "Limits and failure
modes" and asserted by the test; this script only writes the inputs.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import sys
import zlib
from pathlib import Path

LABELS = [
    "Deep Learning · Attention Mechanisms",
    "Deep Learning · Graph Neural Networks",
    "Optimization · Convex",
    "Theory · Learning Theory",
    "Reinforcement Learning · Deep RL",
]
TOPICS = [
    "sparse attention for long sequences in transformers",
    "message passing on molecular graphs with equivariant layers",
    "convergence of accelerated gradient methods for convex objectives",
    "generalization bounds from algorithmic stability and margins",
    "policy optimization with learned world models for control",
]


def abstract(i: int) -> str:
    """A plausible abstract, different for every ``i`` (so no record is a duplicate of another)."""
    topic = TOPICS[i % len(TOPICS)]
    return (
        f"We study {topic}. Our method number {i} improves accuracy and efficiency on standard benchmarks, "
        f"and an analysis explains when it helps. Experiments on {i % 7 + 2} datasets confirm the theory."
    )


def good(i: int, **extra) -> dict:
    return {"id": f"good-{i}", "title": f"Paper {i}", "abstract": abstract(i), "label": LABELS[i % 5], **extra}


def jsonl(records) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def gzip_stream(path: Path, parts) -> None:
    """Gzip ``parts`` (an iterable of byte blocks) into ``path`` as they come: the text is never held whole."""
    squash = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    with open(path, "wb") as out:
        for part in parts:
            out.write(squash.compress(part))
        out.write(squash.flush())


def repeated(block: bytes, total: int):
    for _ in range(total // len(block)):
        yield block


# --------------------------------------------------------------------------- the cases


def bomb_one_line(folder: Path, line_mib: int) -> str:
    def parts():
        yield jsonl([good(0), good(1)]) + b'{"id": "bomb", "abstract": "'
        yield from repeated(b"x" * (1 << 20), line_mib << 20)
        yield b'"}\n' + jsonl([good(2)])

    gzip_stream(folder / "bomb-one-line.jsonl.gz", parts())
    return f"gzip: 2 records, one {line_mib} MiB line (record 3), 1 record"


def bomb_many_lines(folder: Path, total_mib: int) -> str:
    line = json.dumps({"abstract": "lorem ipsum dolor " * 3500}).encode() + b"\n"  # ~63 kB: rejected, not too long

    def parts():
        yield jsonl([good(0)])
        yield from repeated(line * 16, total_mib << 20)

    gzip_stream(folder / "bomb-many-lines.jsonl.gz", parts())
    return f"gzip: {total_mib} MiB of 63 kB lines once decompressed"


SURROGATES = [
    json.dumps(good(0)),
    '{"id": "bad\\udc00id", "abstract": "A fine abstract about kernels and graphs.", "label": "Theory"}',
    '{"id": "bad-title", "title": "T\\ud800", "abstract": "Another fine abstract about graphs.", "label": "Theory"}',
    '{"id": "bad-abstract", "abstract": "Graph \\udfff networks for molecules.", "label": "Theory"}',
    json.dumps(good(1)),
]


def text_dump(n: int) -> str:
    return "Papers\n\n" + "\n\n".join(abstract(i) for i in range(n)) + "\n"


def wide_records(folder: Path) -> None:
    (folder / "wide-abstract.jsonl").write_bytes(
        jsonl([good(0), {"id": "wide", "abstract": "word " * (1 << 20), "label": LABELS[0]}, good(1)])  # 5 MiB
    )
    (folder / "wide-title.jsonl").write_bytes(
        jsonl([good(0), {"id": "wide", "title": "T" * (2 << 20), "abstract": abstract(9)}, good(1)])  # 2 MiB title
    )


def spread_records(folder: Path) -> None:
    """A JSON array whose records span many lines (pretty-printed author lists): 8 records of ~0.8 MB, then one
    of ~6 MB (over the record limit). Re-parsing a record from its start for every block was quadratic."""

    def record(i: int, authors: int) -> str:
        names = ",\n".join(f'    "Author Number {j} of paper {i}"' for j in range(authors))
        return f'{{"id": "spread-{i}", "abstract": "{abstract(i)}",\n "authors": [\n{names}\n]}}'

    records = [record(i, 22_000) for i in range(8)] + [record(8, 170_000), record(9, 3)]
    (folder / "spread-records.json").write_text("[\n" + ",\n".join(records) + "\n]\n", encoding="utf-8")


def csv_injection(folder: Path) -> None:
    rows = [
        ('=HYPERLINK("http://x","y")', "=1+2", "=cmd · +run"),
        ("+cmd", "-2+3", LABELS[0]),
        ("@SUM(A1)", "@title", "@area · -sub"),
        ("-ok", "\tTabbed title", LABELS[1]),
    ]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "title", "abstract", "label"])
    for i, (id_, title, label) in enumerate(rows):
        writer.writerow([id_, title, abstract(i), label])
    (folder / "csv-injection.csv").write_text(buffer.getvalue(), encoding="utf-8")


def many_labels(folder: Path, n: int = 1500) -> None:
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 10))) for _ in range(4000)]
    (folder / "many-labels.jsonl").write_bytes(
        jsonl(
            {"abstract": " ".join(rng.choice(words) for _ in range(120)) + ".", "label": f"Theory · Topic {i}"}
            for i in range(n)
        )
    )


def nul_bytes(folder: Path) -> None:
    lines = [
        json.dumps(good(0)).encode(),
        b'{"id": "raw-nul", "abstract": "Graph networks \x00 for molecules with raw NUL bytes."}',
        b'{"id": "escaped-nul", "abstract": "Graph networks \\u0000 for molecules with an escaped NUL."}',
        b'{"id": "only-nul", "abstract": "\\u0000\\u0000"}',
        json.dumps(good(1)).encode(),
    ]
    (folder / "nul-bytes.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def invalid_json(folder: Path) -> None:
    lines = [
        json.dumps(good(0)),
        '{"id": "broken", "abstract": "unterminated',
        "[1, 2, 3]",
        '"just a string"',
        "[" * 5000 + "]" * 5000,
        '{"id": "huge-int", "abstract": "numbers", "n": ' + "9" * 5000 + "}",
        '{"id": "no-abstract", "title": "Only a title"}',
        '{"id": "typed", "abstract": 17}',
        json.dumps(good(1)),
    ]
    (folder / "invalid-json.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- round three (issue 26)

SPACES = 100_000  # a run of spaces in an authors line: the et-al regular expression took ~59 s on it


def spaces_in_authors(folder: Path, spaces: int = SPACES) -> None:
    """A labeled text dump whose second record has 'a', ``spaces`` spaces and 'b' where its authors line goes."""
    text = (
        f"{LABELS[0]}\n\nA. Smith, B. Jones et al.\n\n{abstract(0)}\n\n"
        f"{LABELS[1]}\n\na{' ' * spaces}b\n\n{abstract(1)}\n\n"
        f"{LABELS[2]}\n\nC. Lee 等\n\n{abstract(2)}\n"
    )
    (folder / "spaces-authors.txt").write_text(text, encoding="utf-8")


LONG_RECORD_PARAGRAPHS = 48_000  # of ~1 KB: one labeled record of ~48 MB, each paragraph under the 1 MiB limit


def long_record(folder: Path, paragraphs: int = LONG_RECORD_PARAGRAPHS) -> int:
    """A gzipped labeled text dump: a good record, then a label line over ``paragraphs`` paragraphs of ~1 KB
    (the record was joined whole: 300,000 of them took 5 GB), then a good record. Returns the long record's line."""
    paragraph = (abstract(7) + " ") * 5
    paragraph = paragraph[:1000].rstrip() + "\n\n"
    first = f"{LABELS[0]}\n\nA. Smith, B. Jones\n\n{abstract(0)}\n\n"
    label_line = first.count("\n") + 1
    last = f"{LABELS[2]}\n\nC. Lee\n\n{abstract(2)}\n"
    gzip_stream(
        folder / "long-record.txt.gz",
        [
            first.encode(),
            f"{LABELS[1]}\n\n".encode(),
            *repeated(paragraph.encode() * 100, len(paragraph) * paragraphs),
            last.encode(),
        ],
    )
    return label_line


def zeros(folder: Path, size: int = 1 << 16) -> None:
    """Zero bytes only (a disk image, /dev/zero): was reported as "UTF-32 text"."""
    (folder / "zeros.txt").write_bytes(bytes(size))


VENUES = 400  # distinct venues: their names joined made a dataset name over MLflow's 500 characters


def many_venues(folder: Path, venues: int = VENUES) -> None:
    """Labeled records from ``venues`` venues (2 each), one venue name 318 characters long (a metric name is
    "records.<venue year>": over MLflow's 250)."""
    names = ["V" * 318] + [f"Workshop on Topic {i}" for i in range(1, venues)]
    (folder / "venues.jsonl").write_bytes(
        jsonl({**good(2 * i + j), "venue": name, "year": 2024} for i, name in enumerate(names) for j in range(2))
    )


def planted_symlinks(folder: Path) -> dict:
    """Links planted where `label -o planted.labeled.jsonl` and `suggest -o planted.picks.txt` create their
    temporary files, pointing at a file the run must not touch."""
    (folder / "planted.jsonl").write_bytes(jsonl(good(i) for i in range(6)))
    victim = folder / "planted-victim.txt"
    victim.write_text("precious: must never be written through a planted link\n", encoding="utf-8")
    outputs = {"label": "planted.labeled.jsonl", "suggest": "planted.picks.txt"}
    for temporary in ("planted.labeled.jsonl.partial", "planted.picks.txt.tmp"):
        link = folder / temporary
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(victim.name)  # relative: the corpus folder can be moved
    return outputs


def write_corpus(folder: Path, bomb_line_mib: int = 64, bomb_total_mib: int = 160) -> dict:
    """Write every case into ``folder``; returns (and writes as MANIFEST.json) file name → description."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = {
        "bomb-one-line.jsonl.gz": bomb_one_line(folder, bomb_line_mib),
        "bomb-many-lines.jsonl.gz": bomb_many_lines(folder, bomb_total_mib),
    }
    (folder / "lone-surrogates.jsonl").write_text("\n".join(SURROGATES) + "\n", encoding="utf-8")
    cases["lone-surrogates.jsonl"] = "lone \\udc00 / \\ud800 / \\udfff escapes in an id, a title, an abstract"
    (folder / "utf16-bom.jsonl").write_text(jsonl([good(0), good(1)]).decode(), encoding="utf-16")
    cases["utf16-bom.jsonl"] = "JSON lines in UTF-16 with a byte-order mark"
    (folder / "utf16-no-bom.txt").write_text(text_dump(3), encoding="utf-16-le")
    cases["utf16-no-bom.txt"] = "a text dump in UTF-16-LE without a byte-order mark"
    wide_records(folder)
    cases["wide-abstract.jsonl"] = "a 5 MiB abstract (record 2) between two records"
    cases["wide-title.jsonl"] = "a 2 MiB title (record 2) between two records"
    spread_records(folder)
    cases["spread-records.json"] = "a JSON array of records spanning thousands of lines; record 9 is ~6 MB"
    csv_injection(folder)
    cases["csv-injection.csv"] = "ids, titles and labels starting with =, +, -, @ or a tab"
    many_labels(folder)
    cases["many-labels.jsonl"] = "1,500 records with 1,500 distinct labels"
    nul_bytes(folder)
    cases["nul-bytes.jsonl"] = "a raw NUL byte (record 2), an escaped one (3), an abstract of NULs only (4)"
    invalid_json(folder)
    cases["invalid-json.jsonl"] = "broken JSON, non-objects, 5,000-deep nesting, a 5,000-digit integer, bad fields"
    (folder / "pruned-vocabulary.jsonl").write_bytes(
        jsonl({"abstract": " ".join(["graph"] * (i + 1)), "label": LABELS[i % 2]} for i in range(12))
    )
    cases["pruned-vocabulary.jsonl"] = "12 labeled abstracts of one repeated word (TF-IDF keeps no term)"
    (folder / "long-paragraph.txt").write_text(
        "Papers\n\n" + abstract(0) + "\n\n" + "a short line of words\n" * 60_000 + "\n" + abstract(1) + "\n",
        encoding="utf-8",
    )
    cases["long-paragraph.txt"] = "a text dump whose 3rd paragraph is 1.3 MB of short lines"
    (folder / "open-quote.csv").write_text(
        'abstract\n"' + abstract(0) + '"\n"' + "an open quote\n" * 90_000 + "\n", encoding="utf-8"
    )
    cases["open-quote.csv"] = "a CSV whose record 2 opens a quote that is never closed (1.2 MB)"
    (folder / "one-object.json").write_text(json.dumps(good(0)), encoding="utf-8")
    cases["one-object.json"] = "a .json file holding one object, not an array"
    (folder / "empty.jsonl").write_bytes(b"")
    cases["empty.jsonl"] = "an empty file"
    spaces_in_authors(folder)
    cases["spaces-authors.txt"] = f"a labeled text dump whose record 2 has {SPACES:,} spaces in its authors line"
    line = long_record(folder)
    cases["long-record.txt.gz"] = (
        f"a labeled text dump whose record 2 (line {line}) has {LONG_RECORD_PARAGRAPHS:,} paragraphs of 1 KB"
    )
    zeros(folder)
    cases["zeros.txt"] = "64 KiB of zero bytes"
    many_venues(folder)
    cases["venues.jsonl"] = f"{2 * VENUES} labeled records from {VENUES} venues, one named with 318 characters"
    outputs = planted_symlinks(folder)
    cases["planted.jsonl"] = f"6 records; links planted at the temporary names of the outputs {outputs}"
    manifest = {"cases": cases, "planted_outputs": outputs, "victim": "planted-victim.txt"}
    (folder / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where to write the case files (created)")
    parser.add_argument("--bomb-line-mib", type=int, default=64, help="the one-line bomb's line, MiB (default 64)")
    parser.add_argument("--bomb-total-mib", type=int, default=160, help="the many-lines bomb's text, MiB (160)")
    args = parser.parse_args(argv)
    if args.folder.exists() and not args.folder.is_dir():
        print(f"error: {args.folder} is a file; name a folder for the corpus", file=sys.stderr)
        return 2
    manifest = write_corpus(args.folder, args.bomb_line_mib, args.bomb_total_mib)
    for name, what in manifest["cases"].items():
        print(f"{name:28} {os.path.getsize(args.folder / name):>10,} bytes  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
