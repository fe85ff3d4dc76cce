"""Input limits (from hostile input, round two): gzip bombs and over-long lines/records read with bounded
memory, a linear-time JSON array reader, training refused up front for more labels than it can hold, two
trains creating one store, corrupted artifacts, a drift report on rejected records, resume and replaced inputs."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest

from papertrack.features.ingest import BadRecord, IngestError, Record, input_limits, iter_records
from tests.serving.label_cli import ABSTRACT, error_lines, label


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


# the peak is VmHWM of the child's own address space: ru_maxrss would carry the forked test process's
# (a GB of pytest after the sweeps) across exec
PEAK = textwrap.dedent("""
    import sys
    from papertrack.features.ingest import iter_records
    kinds = [getattr(item, "kind", "ok") for item in iter_records(sys.argv[1])]
    print(" ".join(kinds))
    hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(int(hwm.split()[1]) // 1024)
""")


def read_in_child(path: Path) -> tuple[list[str], int]:
    """The kinds of the items read from ``path`` in a fresh Python, and its peak memory (MiB)."""
    done = subprocess.run([sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    kinds, peak = done.stdout.splitlines()[-2:]
    return kinds.split(), int(peak)


# --------------------------------------------------------------------------- 4. memory


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


# --------------------------------------------------------------------------- 5. CPU


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


# --------------------------------------------------------------------------- 11. drift on rejected records


@pytest.fixture(scope="module")
def fitted_profile():
    from tests.synthetic_corpus import fitted_predictor

    predictor = fitted_predictor(per_label=20, seed=0)
    predictor = predictor[0] if isinstance(predictor, tuple) else predictor
    return predictor.training_profile


def labeled_row(source: str, line: int, label: str) -> str:
    return (
        json.dumps(
            {
                "id": f"r{line}",
                "source": source,
                "line": line,
                "tracks": [{"label": label, "probability": 0.9}],
                "area": label.split(" · ")[0],
            }
        )
        + "\n"
    )


def test_a_drift_report_with_every_record_rejected_compares_nothing(tmp_path, fitted_profile):
    """It said "label JS 0.000" (reads as identical) and took the OOV share from the rejected text."""
    from papertrack.models.drift import summary_lines
    from papertrack.serving.batch.drift_report import output_drift

    dump = tmp_path / "d.jsonl"
    dump.write_text("".join(json.dumps({"abstract": "qwxz " * 5000}) + "\n" for _ in range(3)))
    out = tmp_path / "out.jsonl"
    out.write_text("")
    report = output_drift(out, [dump], fitted_profile)
    assert report["records"] == 0 and report["label_js"] is None and report["oov_share"] is None
    assert summary_lines(report) == [
        "drift vs training data: no record to compare: every record was rejected (see the errors file)"
    ]
    json.dumps(report)


def test_the_out_of_vocabulary_share_ignores_rejected_records(tmp_path, fitted_profile):
    from papertrack.serving.batch.drift_report import output_drift

    known = " ".join(sorted(term for term in fitted_profile.vocabulary if " " not in term)[:40])
    dump = tmp_path / "d.jsonl"
    dump.write_text(json.dumps({"abstract": "qwxz " * 5000}) + "\n" + json.dumps({"abstract": known}) + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text(labeled_row(str(dump), 2, "Deep Learning · Graph Neural Networks"))
    report = output_drift(out, [dump], fitted_profile)
    assert report["records"] == 1 and report["oov_share"] < 0.5


# --------------------------------------------------------------------------- 6. more labels than training can hold


def many_labels(tmp_path: Path, n: int, labels: int) -> Path:
    import random

    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 10))) for _ in range(4000)]
    path = tmp_path / "many_labels.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "abstract": " ".join(rng.choice(words) for _ in range(120)) + ".",
                    "label": f"Theory · Topic {i % labels}",
                }
            )
            + "\n"
            for i in range(n)
        )
    )
    return path


@pytest.mark.slow  # `papertrack train` in a fresh interpreter
def test_train_with_a_label_per_record_is_refused_up_front(tmp_path):
    """1,500 records with 1,500 distinct labels grew past 18 GB and were OOM-killed without a word."""
    data = many_labels(tmp_path, 1500, 1500)
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
        "from papertrack.cli import main; sys.argv = ['papertrack'] + sys.argv[1:]; main()"
    )
    env = {**__import__("os").environ, "PAPERTRACK_HOME": str(tmp_path / "home")}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, "train", "--data", str(data), "-c", "tfidf-word-cnb"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("train was still running after 120 s instead of refusing up front")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-3000:]
    assert "Traceback" not in output
    (line,) = error_lines(output)
    assert "many_labels.jsonl" in line and "1,500 distinct labels for 1,500 labeled records" in line
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.pkl"))


@pytest.mark.slow  # 1.5 s (--durations)
def test_a_label_count_that_does_not_fit_in_memory_is_refused_naming_the_fix(tmp_path):
    from papertrack.errors import UsageError
    from papertrack.training import preflight
    from papertrack.training.dataset import load_dataset

    records, _ = load_dataset(many_labels(tmp_path, 3000, 300))
    preflight.check(records, ["d.jsonl"], jobs=2, available=64 << 30)
    with pytest.raises(UsageError) as caught:
        preflight.check(records, ["d.jsonl"], jobs=2, available=1 << 30)
    message = str(caught.value)
    assert message.startswith("d.jsonl: 300 distinct labels need about") and "Train with --jobs 1" in message
    ordinary = [r for r in records if int(r.label.rsplit(" ", 1)[1]) < 20]
    preflight.check(ordinary, ["d.jsonl"], jobs=2, available=1 << 30)  # 20 labels: trains


# --------------------------------------------------------------------------- 9. two trains creating one store

RACER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    go = Path(sys.argv[1])
    while not go.exists():
        time.sleep(0.001)
    from papertrack import store
    store.open()
    print("ok")
""")


@pytest.mark.slow
def test_commands_creating_one_new_store_at_once_do_not_collide(tmp_path):
    """Two `papertrack train` at once on a new store: OperationalError: table registered_model_tags already
    exists. MLflow is imported first in every racer, then all create the store at the same moment."""
    import os

    failures = []
    for attempt in range(2):
        home, go = tmp_path / f"home{attempt}", tmp_path / f"go{attempt}"
        env = {**os.environ, "PAPERTRACK_HOME": str(home)}
        env.pop("MLFLOW_TRACKING_URI", None)
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", "import mlflow, sqlalchemy\n" + RACER, str(go)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        time.sleep(8)  # every racer has imported mlflow and waits
        go.touch()
        for racer in racers:
            out, err = racer.communicate(timeout=180)
            if racer.returncode != 0:
                failures.append(err.strip().splitlines()[-1])
    assert not failures, failures


@pytest.mark.slow  # `papertrack train` in a fresh interpreter
def test_a_read_only_home_is_one_error_line(tmp_path):
    import os

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder should be")
    env = {**os.environ, "PAPERTRACK_HOME": str(blocker / "home")}
    env.pop("MLFLOW_TRACKING_URI", None)
    data = many_labels(tmp_path, 40, 4)
    done = subprocess.run(
        [sys.executable, "-m", "papertrack.cli", "train", "--data", str(data), "-c", "tfidf-word-cnb"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in output, output[-3000:]
    (line,) = error_lines(output)
    assert str(blocker) in line and "PAPERTRACK_HOME" in line


# --------------------------------------------------------------------------- 12. resume and a replaced input


def test_resume_refuses_an_input_replaced_by_one_of_the_same_size_and_time(tmp_path, fake_model, monkeypatch):
    import os

    from tests.serving.label_cli import interrupted_run

    source, out = interrupted_run(tmp_path, monkeypatch)
    stat = source.stat()
    data = source.read_bytes()
    source.write_bytes(data.replace(b'"p0"', b'"q0"'))  # same size, other content
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.stat().st_size == stat.st_size and source.stat().st_mtime_ns == stat.st_mtime_ns
    result = label(str(source), "-o", str(out), "--chunk-size", "5", "--resume")
    assert result.exit_code == 2, result.output
    assert "input files (paths, sizes, times or contents) changed" in " ".join(result.output.split())


# --------------------------------------------------------------------------- found by the hostile corpus


@pytest.mark.usefixtures("fake_model")
def test_a_chunk_ends_once_its_records_hold_too_much_text(tmp_path, monkeypatch):
    """2,000 records of up to 1 MiB each (over-long abstracts, all rejected) were held at once: ~2 GiB."""
    import papertrack.serving.batch.labeler.run as run
    from tests.conftest import FakeBackend

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


def test_suggest_csv_cells_cannot_start_a_formula():
    """`suggest -o picks.csv` wrote ids, titles and abstracts starting with =, +, -, @ as they were."""
    import csv
    import io

    from papertrack.serving.batch.suggest import Suggestion, render

    record = Record(
        id="=HYPERLINK(1)", abstract="-2+3 is the abstract", title="@title", label=None, area=None, subarea=None,
        source="d.csv", line=2, authors="+author",
    )  # fmt: skip
    tracks = [{"label": "Theory", "probability": 0.5}]
    text = render([Suggestion(record, 1, 0.5, tracks)], "csv", strategy="diverse", model="m", name="picks.csv")
    (row,) = csv.DictReader(io.StringIO(text))
    assert (row["id"], row["title"], row["authors"], row["abstract"]) == (
        "'=HYPERLINK(1)", "'@title", "'+author", "'-2+3 is the abstract"
    )  # fmt: skip
    assert row["label"] == "Theory" and row["rank"] == "1"
