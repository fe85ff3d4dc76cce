"""Labeling with worker processes (``workers`` > 1): the same bytes as one process, chunks written in input order,
a worker that dies stops the run with a resumable checkpoint, Ctrl-C leaves no process behind, and a one-chunk
input never starts a pool. A fake model (answers from the abstract's words) keeps these fast."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from papertrack.serving.batch import labeler
from papertrack.serving.batch.labeler import LabelError, label_dumps
from papertrack.serving.batch.labeler.label_errors import WorkerDied

PARENT = os.getpid()


class WordsBackend:
    """Ranks two tracks by the abstract's length (so rows differ record by record); rejects abstracts with 'reject'.
    ``die_on``: an abstract that makes a worker process (never the test's own process) exit at once."""

    labels = frozenset({"Theory", "Deep Learning", "Optimization"})
    n_labels = 3
    identity = {"run_id": "words"}
    description = "words"

    def __init__(self, die_on: str | None = None):
        self.die_on = die_on

    def label(self, records, k):
        answers = []
        for r in records:
            if self.die_on and self.die_on in r.abstract and os.getpid() != PARENT:
                os._exit(9)
            if "reject" in r.abstract:
                answers.append("rejected on purpose")
                continue
            p = round(0.5 + (len(r.abstract) % 40) / 100, 6)
            tracks = [
                {"label": "Theory", "area": "Theory", "subarea": None, "probability": p},
                {"label": "Deep Learning", "area": "Deep Learning", "subarea": None, "probability": 0.9 - p},
                {"label": "Optimization", "area": "Optimization", "subarea": None, "probability": 0.1},
            ]
            if len(r.abstract) % 2:
                tracks[:2] = tracks[1::-1]
            answers.append(
                {
                    "tracks": tracks[:k],
                    "areas": [{"area": t["label"], "probability": t["probability"]} for t in tracks],
                    "prediction_set": [tracks[0]["label"]],
                    "confident": p > 0.7,
                }
            )
        return answers

    def close(self):
        pass


@pytest.fixture
def children():
    """This process's child processes started before the test (e.g. joblib's workers of earlier tests): a test
    checks that none of its own is left (``multiprocessing.active_children()`` also reaps finished ones)."""
    return set(multiprocessing.active_children())


@pytest.fixture
def dump(tmp_path) -> Path:
    """230 records: labeled ones, a repeated id, a broken line, an empty abstract and one the model rejects."""
    lines = []
    for i in range(230):
        record = {"id": f"r{i % 200}", "abstract": f"abstract {i} " + "about kernels " * (i % 13)}
        if i % 3 == 0:
            record["label"] = "Theory" if i % 2 else "Deep Learning"
        lines.append(json.dumps(record))
    lines[17] = "{broken"
    lines[50] = json.dumps({"id": "empty", "abstract": "  "})
    lines[120] = json.dumps({"id": "no", "abstract": "please reject this"})
    path = tmp_path / "dump.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_workers_write_the_same_bytes_and_counts_as_one_process(dump, tmp_path, suffix, children):
    one = label_dumps([dump], tmp_path / f"one.{suffix}", WordsBackend(), chunk_size=16, workers=1)
    pool = label_dumps([dump], tmp_path / f"pool.{suffix}", WordsBackend(), chunk_size=16, workers=2)
    assert (tmp_path / f"pool.{suffix}").read_bytes() == (tmp_path / f"one.{suffix}").read_bytes()
    assert (tmp_path / "pool.errors.jsonl").read_bytes() == (tmp_path / "one.errors.jsonl").read_bytes()
    assert pool.counters == one.counters
    c = pool.counters
    assert (c.inputs, c.rows, c.errors, c.duplicate_ids) == (230, 227, 3, 29)  # r0-r29 again, but r17 was broken
    assert c.labeled == 76  # every third of the 230 records, less the broken line 17's
    assert set(multiprocessing.active_children()) <= children


def test_progress_is_reported_chunk_by_chunk_in_input_order(dump, tmp_path):
    lines = []
    label_dumps(
        [dump],
        tmp_path / "o.jsonl",
        WordsBackend(),
        chunk_size=16,
        workers=2,
        on_chunk=lambda n, line: lines.append(line),
    )
    assert lines == [*range(16, 230, 16), 230]


def test_a_one_chunk_input_starts_no_pool(dump, tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(labeler.run, "_start_pool", lambda *a: started.append(a) or pytest.fail("pool started"))
    result = label_dumps([dump], tmp_path / "o.jsonl", WordsBackend(), chunk_size=500, workers=2)
    assert result.counters.inputs == 230 and started == []


def test_a_worker_that_dies_stops_the_run_and_resume_finishes_it(dump, tmp_path, children):
    clean = tmp_path / "clean.jsonl"
    label_dumps([dump], clean, WordsBackend(), chunk_size=16, workers=1)
    out = tmp_path / "died.jsonl"
    with pytest.raises(WorkerDied, match="worker process died .* rerun with --resume"):
        label_dumps([dump], out, WordsBackend(die_on="abstract 100 "), chunk_size=16, workers=2)
    assert set(multiprocessing.active_children()) <= children
    assert not out.exists()
    done = json.loads(out.with_name("died.jsonl.checkpoint.json").read_text())["counters"]["inputs"]
    assert 16 <= done <= 96 and done % 16 == 0  # whole chunks before the one holding record 100

    result = label_dumps([dump], out, WordsBackend(), chunk_size=16, workers=2, resume=True)
    assert result.resumed_from == done
    assert out.read_bytes() == clean.read_bytes()
    assert out.with_name("died.errors.jsonl").read_bytes() == clean.with_name("clean.errors.jsonl").read_bytes()


def test_ctrl_c_leaves_no_worker_and_a_resumable_run(dump, tmp_path, children):
    clean = tmp_path / "clean.jsonl"
    label_dumps([dump], clean, WordsBackend(), chunk_size=16, workers=1)
    out = tmp_path / "int.jsonl"
    written = []

    def interrupt(n, line):
        written.append(n)
        if len(written) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        label_dumps([dump], out, WordsBackend(), chunk_size=16, workers=2, on_chunk=interrupt)
    assert set(multiprocessing.active_children()) <= children
    result = label_dumps([dump], out, WordsBackend(), chunk_size=16, workers=2, resume=True)
    assert result.resumed_from == 48
    assert out.read_bytes() == clean.read_bytes()


def test_a_worker_starts_with_ctrl_c_ignored():
    with multiprocessing.get_context("fork").Pool(1, initializer=labeler.run._worker_init) as pool:
        assert pool.apply(signal.getsignal, (signal.SIGINT,)) is signal.SIG_IGN


def test_workers_below_one_is_refused(dump, tmp_path):
    with pytest.raises(LabelError, match="--workers must be at least 1"):
        label_dumps([dump], tmp_path / "o.jsonl", WordsBackend(), workers=0)


def test_default_workers_one_per_core_up_to_two_for_the_local_model_only(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert labeler.run.default_workers(WordsBackend()) == 1  # not forkable: e.g. the HTTP backend
    forkable = WordsBackend()
    forkable.forkable = True  # type: ignore[attr-defined]
    assert labeler.run.default_workers(forkable) == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert labeler.run.default_workers(forkable) == 1


def test_cli_refuses_workers_with_url(dump, tmp_path):
    from papertrack.cli import app

    result = CliRunner().invoke(
        app, ["label", str(dump), "-o", str(tmp_path / "o.jsonl"), "--url", "http://127.0.0.1:9", "--workers", "2"]
    )
    assert result.exit_code == 2
    assert "--workers is for labeling with the model here" in " ".join(result.output.split())


def test_cli_a_dead_worker_is_one_error_line_and_exit_1(dump, tmp_path, monkeypatch, children):
    from papertrack.cli import app

    class Dying(WordsBackend):
        forkable = True

        def __init__(self, model_uri, taxonomy=None, store=None):
            super().__init__(die_on="abstract 100 ")

    monkeypatch.setattr(labeler, "LocalBackend", Dying)
    out = tmp_path / "o.jsonl"
    result = CliRunner().invoke(app, ["label", str(dump), "-o", str(out), "--chunk-size", "16", "--no-progress"])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "worker process died" in errors[0] and "Traceback" not in result.output
    assert out.with_name("o.jsonl.checkpoint.json").exists()
    assert set(multiprocessing.active_children()) <= children
