"""Spark holds what the local engine holds (issue 35, item 7): the hostile corpus (``tests/hostile_corpus.py``,
its bombs made smaller to bound the time) gives the same rows and error rows on both engines — a line over the
limit is a ``too-long`` row on Spark too, input = output + errors on both — the fatal cases end with the same
error line, and a JVM that dies mid-job is one ``error:`` line with how it ended, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from papertrack.features.ingest import input_limits
from papertrack.serving.batch.labeler.spark.inputs import _batches
from papertrack.serving.batch.labeler.spark.session import exit_text

MASTER = "local[2]"
LINE_MIB = 4  # the one-line bomb's line: over the 1 MiB limit of one line
MAX_INPUT_MIB = 24  # the decompressed limit for both engines: over every case but the many-lines bomb
TOTAL_MIB = 32  # the many-lines bomb's text
LONG_RECORD_PARAGRAPHS = 4_000  # one labeled record of ~4 MB: over the 1 MiB limit of one record
SPARK_SECONDS = 300.0  # ceiling of the Spark runs together (a loaded 2-core machine)

# the corpus's cases the local engine labels (exit 0/3), all given to one run of each engine; the others are fatal
FATAL = {
    "bomb-many-lines.jsonl.gz",
    "utf16-bom.jsonl",
    "utf16-no-bom.txt",
    "open-quote.csv",
    "one-object.json",
    "empty.jsonl",
    "zeros.txt",
}


def _spark_ready() -> None:
    pytest.importorskip("pyspark", reason="pip install -e '.[spark]' (pyspark) for the Spark labeling tests")
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java 17: apt-get install -y openjdk-17-jre-headless")


def run_cli(*args: str):
    from typer.testing import CliRunner

    from papertrack.cli import app

    with input_limits(max_bytes=MAX_INPUT_MIB << 20):
        return CliRunner().invoke(app, ["label", *args, "--no-progress"])


def read_jsonl(paths) -> list[dict]:
    return [json.loads(line) for path in paths for line in Path(path).read_text(encoding="utf-8").splitlines()]


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    from tests import hostile_corpus

    folder = tmp_path_factory.mktemp("hostile-spark")
    hostile_corpus.write_corpus(folder, bomb_line_mib=LINE_MIB, bomb_total_mib=TOTAL_MIB)
    hostile_corpus.long_record(folder, LONG_RECORD_PARAGRAPHS)  # 48 MB by default
    good = [json.dumps(hostile_corpus.good(i)).encode() for i in range(3)]
    # a lone CR inside a line (Hadoop's default reader ended a line there; the local reader does not), a CRLF
    (folder / "lone-cr.jsonl").write_bytes(good[0] + b"\r" + good[1] + b"\n" + good[2] + b"\r\n")
    return folder


@pytest.fixture(scope="module")
def labelable(corpus) -> list[Path]:
    manifest = json.loads((corpus / "MANIFEST.json").read_text())
    return [corpus / name for name in [*manifest["cases"], "lone-cr.jsonl"] if name not in FATAL]


@pytest.fixture(scope="module")
def both_engines(trained, labelable, tmp_path_factory):
    _spark_ready()
    out = tmp_path_factory.mktemp("hostile-engines")
    local = run_cli(*map(str, labelable), "-o", str(out / "local.jsonl"))
    started = time.perf_counter()
    spark = run_cli(*map(str, labelable), "-o", str(out / "spark.jsonl"), "--engine", "spark", "--master", MASTER)
    return {"local": local, "spark": spark, "out": out, "spark_seconds": time.perf_counter() - started}


@pytest.mark.timeout(900)
def test_the_hostile_corpus_gives_the_same_rows_and_error_rows_on_both_engines(both_engines, labelable):
    local, spark, out = both_engines["local"], both_engines["spark"], both_engines["out"]
    assert local.exit_code == 3, local.output[-3000:]
    assert spark.exit_code == 3, spark.output[-3000:]
    assert "Traceback" not in spark.output and not error_lines(spark.output)
    assert both_engines["spark_seconds"] < SPARK_SECONDS
    folder = out / "spark.jsonl"
    spark_rows = read_jsonl(sorted((folder / "labels").glob("part-*.jsonl")))
    local_rows = read_jsonl([out / "local.jsonl"])
    assert [(r["source"], r["line"], r["id"]) for r in spark_rows] == [
        (r["source"], r["line"], r["id"]) for r in local_rows
    ]
    assert [[t["label"] for t in r["tracks"]] for r in spark_rows] == [
        [t["label"] for t in r["tracks"]] for r in local_rows
    ]
    spark_errors = read_jsonl(sorted((folder / "errors").glob("part-*.jsonl")))
    local_errors = read_jsonl([out / "local.errors.jsonl"])
    assert spark_errors == local_errors  # source, line, id, kind and reason
    bomb = str(labelable[0])
    assert bomb.endswith("bomb-one-line.jsonl.gz")
    assert [(e["line"], e["kind"]) for e in spark_errors if e["source"] == bomb] == [(3, "too-long")]
    assert [(r["line"], r["id"]) for r in spark_rows if r["source"] == bomb] == [
        (1, "good-0"),
        (2, "good-1"),
        (4, "good-2"),
    ]
    lone_cr = [(e["line"], e["kind"]) for e in spark_errors if e["source"].endswith("lone-cr.jsonl")]
    assert lone_cr == [(1, "invalid")]
    counters = json.loads((folder / "summary.json").read_text())["counters"]
    assert counters["inputs"] == counters["rows"] + counters["errors"]
    assert (counters["rows"], counters["errors"]) == (len(local_rows), len(local_errors))
    for result in (local, spark):  # input = output + errors, as each engine reports it
        assert f"{counters['inputs']:,} input records = {counters['rows']:,} labeled rows" in " ".join(
            result.output.split()
        )
    assert sorted(p.name for p in folder.iterdir()) == ["_SUCCESS", "errors", "labels", "summary.json"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", sorted(FATAL))
def test_a_fatal_case_is_the_same_error_line_on_both_engines(trained, corpus, case, tmp_path):
    _spark_ready()
    local = run_cli(str(corpus / case), "-o", str(tmp_path / "local.jsonl"))
    spark = run_cli(str(corpus / case), "-o", str(tmp_path / "spark.jsonl"), "--engine", "spark", "--master", MASTER)
    assert local.exit_code == spark.exit_code == 2, (local.output[-2000:], spark.output[-2000:])
    assert "Traceback" not in spark.output
    assert error_lines(spark.output) == error_lines(local.output)
    assert len(error_lines(spark.output)) == 1 and str(corpus / case) in error_lines(spark.output)[0]
    assert not (tmp_path / "spark.jsonl").exists() and not (tmp_path / "spark.jsonl.partial").exists()


def test_the_driver_holds_one_batch_of_what_it_reads():
    pulled = []

    def rows(n: int, size: int):
        for i in range(n):
            pulled.append(i)
            yield (0, i + 1, b"x" * size, None, None, None, None, None, None)

    batches = _batches(rows(10_000, 10), most_rows=100, most_bytes=1 << 20)
    first = next(batches)
    assert len(first) == 100 and len(pulled) == 100  # nothing read ahead of the batch handed on
    assert [len(b) for b in _batches(rows(50, 1_000), most_rows=100, most_bytes=10_000)] == [10] * 5


def test_how_a_jvm_ended_is_said_in_words():
    assert exit_text(-9) == "killed by signal 9 (SIGKILL, also what the kernel's out-of-memory killer sends)"
    assert exit_text(-15) == "killed by signal 15 (SIGTERM)"
    assert exit_text(52).startswith("with exit status 52 (out of memory: give the driver more, e.g. --spark-conf")
    assert exit_text(1) == "with exit status 1"


def test_a_gateway_error_without_a_java_exception_waits_for_the_jvm_to_say_how_it_ended():
    """Killed mid-call, the JVM may leave Py4J an error answer without a Java exception ("An error occurred while
    calling o88.collectToPython"), before its connection drops: that, like a lost connection, is a JVM that may be
    dying (its exit status is waited for), unlike an exception the JVM raised and sent back."""
    pytest.importorskip("py4j")
    from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError

    from papertrack.serving.batch.labeler.spark.job import _jvm_lost

    class JavaError(Py4JJavaError):  # an exception the JVM raised and sent back (its text, without a gateway)
        def __init__(self, message: str):
            Exception.__init__(self, message)

        def __str__(self) -> str:
            return str(self.args[0])

    assert _jvm_lost(Py4JError("An error occurred while calling o88.collectToPython"))
    assert _jvm_lost(Py4JNetworkError("Answer from Java side is empty"))
    assert _jvm_lost(ConnectionResetError())
    assert not _jvm_lost(JavaError("org.apache.spark.SparkException: Job aborted due to stage failure"))
    assert _jvm_lost(JavaError("java.lang.IllegalStateException: SparkContext was shut down"))
    assert not _jvm_lost(ValueError("bad input"))


@pytest.mark.timeout(420)
def test_a_jvm_killed_mid_job_is_one_error_line_with_the_signal(trained, data_dir, tmp_path):
    """`papertrack label --engine spark` in a child process; its JVM (a child of it, which this test started) is
    killed once the job writes its partial output: one error line saying so, no traceback, no output."""
    _spark_ready()
    import psutil

    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PAPERTRACK_HOME": str(trained["home"])}
    env.pop("MLFLOW_TRACKING_URI", None)
    command = [
        str(Path(sys.executable).with_name("papertrack")),
        "label",
        str(data_dir / "samples" / "labeled_dump.txt"),
    ]
    child = subprocess.Popen(
        [*command, "-o", str(out), "--engine", "spark", "--master", MASTER, "--no-progress"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        partial = Path(str(out) + ".partial")
        while not partial.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert partial.exists(), "the job never started"
        (jvm,) = [p for p in psutil.Process(child.pid).children(recursive=True) if p.name() == "java"]
        os.kill(jvm.pid, signal.SIGKILL)
        output, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    (line,) = error_lines(output)
    assert line.startswith("error: the Spark JVM died, killed by signal 9 (SIGKILL"), line
    assert not out.exists() and not partial.exists()
