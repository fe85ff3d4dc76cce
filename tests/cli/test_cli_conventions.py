"""Command-line conventions (issue 20): ``-`` reads standard input, ``--version``, and exit statuses that
tell a finished run with failed records (3) from a clean one (0) and from bad input (2)."""

from __future__ import annotations

import gzip
import json
from importlib import metadata

import pytest
from typer.testing import CliRunner

from tests.fake_backend import FakeBackend
from tests.serving.label_cli import ABSTRACT, NoModel, flat


@pytest.fixture()
def fake_model(monkeypatch):
    import papertrack.serving.batch.labeler as labeler

    monkeypatch.setattr(labeler, "LocalBackend", FakeBackend)


def invoke(*args: str, **kwargs):
    from papertrack.cli import app

    return CliRunner().invoke(app, list(args), **kwargs)


def lines(n: int, bad: int = 0) -> bytes:
    good = [json.dumps({"id": f"p{i}", "abstract": f"{ABSTRACT} Variant {i}."}) for i in range(n)]
    return ("\n".join(good + ["{broken json"] * bad) + "\n").encode("utf-8")


# --------------------------------------------------------------------------- 8. - is standard input


def test_label_reads_a_gzip_stream_from_stdin(tmp_path, fake_model):
    out = tmp_path / "x.jsonl"
    result = invoke("label", "-", "-o", str(out), "--no-progress", input=gzip.compress(lines(4, bad=1)))
    assert result.exit_code == 3, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    errors = [json.loads(line) for line in (tmp_path / "x.errors.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["p0", "p1", "p2", "p3"] and {r["source"] for r in rows} == {"<stdin>"}
    assert [(e["source"], e["line"]) for e in errors] == [("<stdin>", 5)]


def test_label_stdin_beside_files_and_refusals(tmp_path, fake_model):
    other = tmp_path / "other.jsonl"
    other.write_bytes(lines(2))
    out = tmp_path / "x.csv"
    result = invoke("label", str(other), "-", "-o", str(out), "--no-progress", input=lines(3))
    assert result.exit_code == 0, result.output
    assert "5 input records = 5 labeled rows" in flat(result.output)
    result = invoke("label", "-", "-", "-o", str(out), "--no-progress", input=lines(1))
    assert result.exit_code == 2 and "more than once" in flat(result.output)
    result = invoke("label", "-", "-o", str(out), "--resume", "--no-progress", input=lines(1))
    assert result.exit_code == 2 and "--resume cannot continue a run that read standard input" in flat(result.output)
    result = invoke("label", "-", "-o", str(out), "--no-progress", input=b"")
    assert result.exit_code == 2 and "<stdin>: file is empty" in flat(result.output)


def test_suggest_reads_stdin(trained, tmp_path, data_dir):
    dump = (data_dir / "samples" / "unlabeled_dump.txt").read_bytes()
    out = tmp_path / "picks.jsonl"
    result = invoke("suggest", "-", "-o", str(out), "-n", "3", input=dump)
    assert result.exit_code == 0, result.output
    picks = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(picks) == 3 and {p["source"] for p in picks} == {"<stdin>"}


# --------------------------------------------------------------------------- 9. --version


def test_version():
    from papertrack import __version__

    result = invoke("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"papertrack {__version__}" == f"papertrack {metadata.version('papertrack')}"


# --------------------------------------------------------------------------- 10. exit status


def test_exit_status_0_clean_3_with_failed_records_2_bad_input(tmp_path, fake_model):
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(lines(3))
    result = invoke("label", str(clean), "-o", str(tmp_path / "a.jsonl"), "--no-progress")
    assert result.exit_code == 0, result.output

    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(lines(3, bad=2))
    result = invoke("label", str(mixed), "-o", str(tmp_path / "b.jsonl"), "--no-progress")
    assert result.exit_code == 3, result.output
    assert "2 record(s) could not be labeled" in flat(result.output)
    assert (tmp_path / "b.jsonl").exists()  # the run finished: its output is complete

    result = invoke("label", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "c.jsonl"), "--no-progress")
    assert result.exit_code == 2


def test_a_text_dump_header_alone_is_not_a_failed_record(tmp_path, fake_model):
    dump = tmp_path / "dump.txt"
    dump.write_text(f"ICLR 2024 Papers\n\n{ABSTRACT}\n\n{ABSTRACT} Again.\n", encoding="utf-8")
    result = invoke("label", str(dump), "-o", str(tmp_path / "a.jsonl"), "--no-progress")
    assert result.exit_code == 0, result.output
    assert "of which 1 is a text dump's header paragraph" in flat(result.output)


def test_label_help_documents_the_exit_statuses():
    result = invoke("label", "--help")
    assert "3 finished, some records in the errors file" in flat(result.output)
    assert "- reads standard" in flat(result.output)


def test_bad_arguments_do_not_load_the_model(tmp_path, monkeypatch):
    import papertrack.serving.batch.labeler as labeler

    monkeypatch.setattr(labeler, "LocalBackend", NoModel)
    result = invoke("label", "-", "-o", str(tmp_path / "x.txt"), "--no-progress", input=lines(1))
    assert result.exit_code == 2 and "must end in .jsonl or .csv" in flat(result.output)
