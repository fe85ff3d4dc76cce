"""One writer per output: a second `papertrack label` run on the output (or the errors file) of a running one is
refused before the model loads and leaves the first run's files untouched; no lock file is left after a run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.serving.label_cli import dump, error_lines, flat, label

HOLDER = textwrap.dedent("""
    import contextlib, sys
    from pathlib import Path
    from papertrack.serving.batch.labeler.checkpoint import Paths, default_errors_path
    try:
        from papertrack.serving.batch.labeler.run import claim_outputs
    except ImportError:  # a papertrack without output locks: the run only has its unfinished files
        claim_outputs = lambda paths: contextlib.nullcontext()
    out = Path(sys.argv[1])
    with claim_outputs(Paths(out, default_errors_path(out))):
        print("ready", flush=True)
        sys.stdin.read()
""")


@pytest.fixture()
def running_labeler(tmp_path):
    """Another process labeling into tmp_path/d.jsonl: it holds the output's lock and has an unfinished run."""
    out = tmp_path / "d.jsonl"
    unfinished = {
        out.with_name("d.jsonl.partial"): b'{"id": "row of the first run"}\n',
        out.with_name("d.jsonl.checkpoint.json"): b'{"version": 1}',
        out.with_name("d.errors.jsonl.partial"): b'{"id": "error of the first run"}\n',
    }
    for path, data in unfinished.items():
        path.write_bytes(data)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc, out, unfinished
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_a_second_run_on_the_same_output_is_refused_and_the_first_kept(running_labeler, tmp_path, fake_model):
    proc, out, unfinished = running_labeler
    result = label(str(dump(tmp_path / "small.jsonl")), "-o", str(out))
    assert all(path.read_bytes() == data for path, data in unfinished.items())  # the first run's files untouched
    assert result.exit_code == 2, result.output
    assert "Labeling with" not in result.output  # refused before the model loads
    (line,) = error_lines(result.output)
    assert f"pid {proc.pid}" in flat(result.output) and str(out) in flat(result.output)
    assert "another papertrack label run" in flat(result.output)
    assert all(path.read_bytes() == data for path, data in unfinished.items())  # the first run's files untouched


def test_outputs_sharing_an_errors_file_cannot_run_at_once(running_labeler, tmp_path, fake_model):
    """-o d.jsonl and -o d.csv both write d.errors.jsonl: the errors file is locked too."""
    proc, out, unfinished = running_labeler
    result = label(str(dump(tmp_path / "small.jsonl")), "-o", str(tmp_path / "d.csv"))
    assert all(path.read_bytes() == data for path, data in unfinished.items())
    assert result.exit_code == 2, result.output
    assert "d.errors.jsonl" in flat(result.output) and f"pid {proc.pid}" in flat(result.output)
    assert "--errors" in flat(result.output)
    assert all(path.read_bytes() == data for path, data in unfinished.items())


def test_the_lock_files_are_gone_after_a_run(tmp_path, fake_model):
    source = dump(tmp_path / "in.jsonl")
    result = label(str(source), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.errors.jsonl", "out.jsonl"]
    assert label(str(source), "-o", str(tmp_path / "out.jsonl")).exit_code == 0  # and a rerun is not refused
