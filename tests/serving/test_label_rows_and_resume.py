"""Batch labeling with `papertrack label`: one row per input record in input order, ids kept, an errors file,
counts that add up, JSONL and CSV output, every input format, streaming in chunks, and --resume after a crash or
a kill -9 giving the same bytes as a clean run (and refusing a changed input)."""

from __future__ import annotations

import csv
import gzip
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from papertrack.features.ingest import BadRecord, Record, iter_records
from tests.serving.label_cli import PAPERTRACK, RecordBackend, flat, label, mixed_dump, read_jsonl, run_cli


@pytest.fixture(scope="module")
def backend(trained):
    from papertrack.serving.batch.labeler import LocalBackend

    return LocalBackend(trained["model_uri"], store=trained["store"])


@pytest.fixture(scope="module")
def subset_dump(labeled_subset, tmp_path_factory) -> Path:
    """The same mixed dump, built without training anything (for the tests on a fake model)."""
    return mixed_dump(labeled_subset, tmp_path_factory.mktemp("subset-dumps") / "mixed.jsonl")


def test_jsonl_one_row_per_record_in_order_with_errors(dump, tmp_path, backend):
    out = tmp_path / "labeled.jsonl"
    result = run_cli(str(dump), "-o", str(out), "--chunk-size", "64")
    assert result.exit_code == 3, result.output  # 3: finished, some records in the errors file
    items = list(iter_records(dump))
    good = [i for i in items if isinstance(i, Record)]
    bad = [i for i in items if isinstance(i, BadRecord)]
    rows = read_jsonl(out)
    errors = read_jsonl(tmp_path / "labeled.errors.jsonl")
    assert len(items) == 306 and len(rows) + len(errors) == len(items)
    assert [r["id"] for r in rows] == [g.id for g in good]  # input order, input ids
    assert [(r["source"], r["line"]) for r in rows] == [(g.source, g.line) for g in good]
    generated = next(r for r in rows if r["title"] == "No id here")
    assert generated["id"].startswith("sha1-")
    assert [(e["line"], e["reason"]) for e in errors] == [(b.line, b.reason) for b in bad]
    assert {e["kind"] for e in errors} == {"invalid", "empty"}
    assert any("invalid JSON" in e["reason"] for e in errors) and any(e["id"] == "empty-1" for e in errors)
    assert not out.with_name("labeled.jsonl.partial").exists()
    assert not out.with_name("labeled.jsonl.checkpoint.json").exists()

    # the answers are the champion's, row by row
    expected = backend.predictor.predict([g.abstract for g in good], [g.title for g in good], 3)
    for row, record, answer in zip(rows, good, expected):
        assert row["tracks"] == [{"label": t["label"], "probability": t["probability"]} for t in answer["tracks"]]
        assert (row["area"], row["area_probability"]) == (answer["areas"][0]["area"], answer["areas"][0]["probability"])
        assert row["label"] == record.label
        assert row["in_top_k"] == (
            None if record.label is None else record.label in [t["label"] for t in row["tracks"]]
        )
        assert row["title"] == record.title
        assert (row["prediction_set"], row["confident"]) == (answer["prediction_set"], answer["confident"])

    text = flat(result.output)
    assert f"306 input records = {len(rows)} labeled rows ({out}) + {len(errors)} errors" in text
    labeled = [r for r in rows if r["label"] is not None]
    top1 = sum(r["tracks"][0]["label"] == r["label"] for r in labeled) / len(labeled)
    top3 = sum(r["in_top_k"] for r in labeled) / len(labeled)
    assert f"{len(labeled):,} inputs had a label: top-1 {top1:.3f}, top-3 {top3:.3f}" in text


def test_csv_output_matches_jsonl(dump, tmp_path):
    assert run_cli(str(dump), "-o", str(tmp_path / "a.jsonl"), "-k", "2").exit_code == 3
    result = run_cli(str(dump), "-o", str(tmp_path / "a.csv"), "-k", "2")
    assert result.exit_code == 3, result.output
    rows = read_jsonl(tmp_path / "a.jsonl")
    with open(tmp_path / "a.csv", newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == [
        "id",
        "number",  # an OpenReview note's number (empty for other inputs)
        "source",
        "line",
        "title",
        "track_1",
        "probability_1",
        "track_2",
        "probability_2",
        "area",
        "area_probability",
        "label",
        "in_top_k",
        "prediction_set",
        "confident",
        "warning",  # empty unless the abstract is mostly outside the training vocabulary
    ]
    assert len(table) == len(rows)
    for row, line in zip(rows, table):
        assert line["id"] == row["id"] and int(line["line"]) == row["line"]
        assert [line["track_1"], line["track_2"]] == [t["label"] for t in row["tracks"]]
        assert [float(line["probability_1"]), float(line["probability_2"])] == [t["probability"] for t in row["tracks"]]
        assert float(line["area_probability"]) == row["area_probability"]
        assert line["label"] == (row["label"] or "")
        assert line["in_top_k"] == ("" if row["in_top_k"] is None else str(row["in_top_k"]).lower())
        assert json.loads(line["prediction_set"]) == row["prediction_set"] and row["prediction_set"]
        assert line["confident"] == str(row["confident"]).lower()
        assert line["warning"] == row.get("warning", "")


def test_every_input_format_in_one_run(trained, data_dir, tmp_path):
    records = [json.loads(line) for line in Path(trained["data"]).read_text(encoding="utf-8").splitlines()[:30]]
    gz = tmp_path / "part.jsonl.gz"
    gz.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records[:10]).encode()))
    array = tmp_path / "part.json"
    array.write_text(json.dumps(records[10:20]), encoding="utf-8")
    table = tmp_path / "part.csv"
    with open(table, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "title", "abstract", "label"])
        for r in records[20:30]:
            writer.writerow([r["id"], r["title"], r["abstract"], r["label"]])
        writer.writerow(["only", "two"])  # wrong number of fields -> an error row
    inputs = [gz, array, table]
    samples = [data_dir / "samples" / "labeled_dump.txt", data_dir / "samples" / "unlabeled_dump.txt"]
    inputs += [p for p in samples if p.exists()]
    out = tmp_path / "all.jsonl"
    result = run_cli(*map(str, inputs), "-o", str(out), "--chunk-size", "7")
    assert result.exit_code == 3, result.output
    items = [(str(p), i) for p in inputs for i in iter_records(p)]
    rows = read_jsonl(out)
    errors = read_jsonl(tmp_path / "all.errors.jsonl")
    assert [(r["source"], r["id"]) for r in rows] == [(s, i.id) for s, i in items if isinstance(i, Record)]
    assert [(e["source"], e["line"]) for e in errors] == [(s, i.line) for s, i in items if isinstance(i, BadRecord)]
    assert len(rows) + len(errors) == len(items)
    assert f"{len(items)} input records = {len(rows)} labeled rows" in flat(result.output)
    headers = sum(isinstance(i, BadRecord) and i.kind == "header" for _, i in items)
    assert headers >= 1  # the sample dumps open with the page's header line: an error row, said to be the header
    said = (
        "of which 1 is a text dump's header paragraph"
        if headers == 1
        else f"of which {headers} are text dumps' header paragraphs"
    )
    assert f"+ {len(errors)} errors ({tmp_path / 'all.errors.jsonl'}, {said})" in flat(result.output)


def test_labeling_streams_in_chunks(backend, tmp_path, monkeypatch):
    """Records are pulled from the reader one chunk at a time: memory does not grow with the dump."""
    from papertrack.serving.batch import labeler

    path = tmp_path / "many.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "abstract": f"abstract number {i} about kernels"}) + "\n" for i in range(1000)
        ),
        encoding="utf-8",
    )
    pulled = {"n": 0}
    real_iter = labeler.run.iter_records

    def counting(*args, **kwargs):
        for item in real_iter(*args, **kwargs):
            pulled["n"] += 1
            yield item

    monkeypatch.setattr(labeler.run, "iter_records", counting)
    sizes, ahead = [], []
    real_label = backend.label

    def spying(records, k):
        sizes.append(len(records))
        ahead.append(pulled["n"] - sum(sizes))  # records read but not yet labeled
        return real_label(records, k)

    monkeypatch.setattr(backend, "label", spying)
    result = labeler.label_dumps([path], tmp_path / "many.out.jsonl", backend, chunk_size=100)
    assert result.counters.inputs == result.counters.rows == 1000
    assert sizes == [100] * 10 and max(ahead) == 0


def test_duplicate_ids_are_counted_and_warned(tmp_path, backend):
    path = tmp_path / "dups.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"p{i % 4}", "abstract": f"abstract {i} about graph kernels"}) + "\n" for i in range(10)
        ),
        encoding="utf-8",
    )
    result = run_cli(str(path), "-o", str(tmp_path / "d.jsonl"), "--chunk-size", "3")
    assert result.exit_code == 0
    assert "warning: 6 records have the id of an earlier record" in flat(result.output)
    assert len(read_jsonl(tmp_path / "d.jsonl")) == 10


def test_over_long_abstract_is_an_error_row_locally_as_over_http(tmp_path, backend):
    from papertrack.serving.batch import labeler

    path = tmp_path / "long.jsonl"
    path.write_text(
        json.dumps({"id": "long", "abstract": "graph " * 4000})
        + "\n"
        + json.dumps({"id": "ok", "abstract": "a graph neural network paper"})
        + "\n",
        encoding="utf-8",
    )
    result = labeler.label_dumps([path], tmp_path / "l.jsonl", backend)
    assert (result.counters.rows, result.counters.errors) == (1, 1)
    (error,) = read_jsonl(tmp_path / "l.errors.jsonl")
    assert error["id"] == "long" and error["kind"] == "rejected" and "at most 20,000" in error["reason"]


def test_error_rows_carry_the_id_and_number_an_answered_row_would(tmp_path, backend):
    """An OpenReview note that cannot be labeled keeps its ``number`` (to join the rows back), as a labeled one."""
    from papertrack.serving.batch import labeler

    path = tmp_path / "notes.jsonl"
    notes = [
        {"id": "a1", "number": 17, "abstract": "a graph neural network paper"},
        {"id": "b2", "number": 18, "abstract": ""},
        {"id": "c3", "number": 19, "abstract": "graph " * 4000},
        {"id": "d4", "number": 20},
    ]
    path.write_text("".join(json.dumps(note) + "\n" for note in notes), encoding="utf-8")
    result = labeler.label_dumps([path], tmp_path / "l.jsonl", backend)
    assert (result.counters.rows, result.counters.errors) == (1, 3)
    (row,) = read_jsonl(tmp_path / "l.jsonl")
    assert (row["id"], row["number"]) == ("a1", 17)
    errors = read_jsonl(tmp_path / "l.errors.jsonl")
    assert [(e["id"], e["number"], e["kind"]) for e in errors] == [
        ("b2", 18, "empty"),
        ("c3", 19, "rejected"),
        ("d4", 20, "invalid"),
    ]


# --------------------------------------------------------------------------- --resume


def test_resume_after_a_crash_gives_the_same_bytes(subset_dump, tmp_path, monkeypatch):
    from papertrack.serving.batch import labeler

    dump, backend = subset_dump, RecordBackend()

    clean = tmp_path / "clean.jsonl"
    labeler.label_dumps([dump], clean, backend, chunk_size=40)

    out = tmp_path / "crash.jsonl"
    calls = {"n": 0}
    real_label = backend.label

    def crashing(records, k):
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("simulated crash")
        return real_label(records, k)

    monkeypatch.setattr(backend, "label", crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        labeler.label_dumps([dump], out, backend, chunk_size=40)
    monkeypatch.setattr(backend, "label", real_label)
    partial = out.with_name("crash.jsonl.partial")
    assert not out.exists() and partial.exists()  # nothing that looks complete
    checkpoint = json.loads(out.with_name("crash.jsonl.checkpoint.json").read_text())
    assert checkpoint["counters"]["inputs"] == 120 and not checkpoint["complete"]
    with open(partial, "ab") as f:  # a torn write after the last checkpoint
        f.write(b'{"id": "half a row')

    result = labeler.label_dumps([dump], out, backend, chunk_size=40, resume=True)
    assert result.resumed_from == 120
    assert out.read_bytes() == clean.read_bytes()
    assert out.with_name("crash.errors.jsonl").read_bytes() == clean.with_name("clean.errors.jsonl").read_bytes()
    assert result.counters.inputs == result.counters.rows + result.counters.errors == 306
    assert not partial.exists()


def test_resume_after_kill_9_equals_a_clean_run(data_dir, backend, tmp_path):
    from papertrack.serving.batch import labeler

    source = data_dir / "ml_abstracts_unlabeled.jsonl.gz"
    if not source.exists():
        pytest.skip(f"{source} not available")
    dump = tmp_path / "unlabeled.jsonl"
    with gzip.open(source, "rt", encoding="utf-8") as f, open(dump, "w", encoding="utf-8") as out:
        for i, line in zip(range(8000), f):
            out.write(line)
            if i == 1234:
                out.write("{broken\n")
    clean = tmp_path / "clean.csv"
    labeler.label_dumps([dump], clean, backend, chunk_size=100)

    out = tmp_path / "killed.csv"
    checkpoint = out.with_name("killed.csv.checkpoint.json")
    command = [PAPERTRACK, "label", str(dump), "-o", str(out), "--chunk-size", "100", "--no-progress"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    done = 0
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                done = json.loads(checkpoint.read_text())["counters"]["inputs"]
            except (OSError, ValueError, KeyError):
                done = 0
            if done >= 300:
                break
            time.sleep(0.01)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    if proc.returncode in (0, 3):
        pytest.fail("the labeling run finished before it could be killed; make the input larger")
    assert proc.returncode == -signal.SIGKILL and done >= 300
    assert not out.exists()

    resumed = subprocess.run(command + ["--resume"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr
    assert "resuming after" in resumed.stderr and "8,001 input records = 8,000 labeled rows" in flat(resumed.stdout)
    assert out.read_bytes() == clean.read_bytes()
    assert out.with_name("killed.errors.jsonl").read_bytes() == clean.with_name("clean.errors.jsonl").read_bytes()


def test_resume_refuses_a_changed_input_or_options(subset_dump, fake_model, tmp_path, monkeypatch):
    from papertrack.serving.batch import labeler

    dump, backend = subset_dump, RecordBackend()

    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(dump.read_bytes())
    out = tmp_path / "r.jsonl"
    real_label = backend.label
    monkeypatch.setattr(backend, "label", lambda records, k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        labeler.label_dumps([copy], out, backend, chunk_size=50)
    monkeypatch.setattr(backend, "label", real_label)
    result = run_cli(str(copy), "-o", str(out), "--resume", "-k", "2")
    assert result.exit_code == 2 and "--top-k changed" in flat(result.output)
    with open(copy, "a", encoding="utf-8") as f:
        f.write(json.dumps({"abstract": "one more"}) + "\n")
    result = run_cli(str(copy), "-o", str(out), "--resume")
    assert result.exit_code == 2 and "input files" in flat(result.output)
    result = run_cli(str(copy), "-o", str(out))  # without --resume: start again
    assert result.exit_code == 3 and "discarding the unfinished run" in flat(result.output)
    assert len(read_jsonl(out)) + len(read_jsonl(tmp_path / "r.errors.jsonl")) == 307


def test_resume_with_nothing_to_resume_starts_over(dump, tmp_path):
    result = run_cli(str(dump), "-o", str(tmp_path / "n.jsonl"), "--resume")
    assert result.exit_code == 3 and "nothing to resume" in flat(result.output)


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
