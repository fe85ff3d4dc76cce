"""Hostile input to ``label``, ``suggest`` and the training reader (issue 19): two runs on one output,
an output that is an input, lone surrogate escapes, CSV injection, symlinks planted at temporary names,
an output that is a folder, UTF-16 input, and every argument checked before the model loads."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from papertrack.features.ingest import IngestError, Record, iter_records
from papertrack.training.dataset import load_dataset
from tests.conftest import FakeBackend

ABSTRACT = "We study graph neural networks and message passing for molecules, with a new benchmark."


class NoModel:
    """A backend that must never be built: the run should have stopped before loading the model."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("the model was loaded before the arguments were checked")


@pytest.fixture()
def no_model(monkeypatch):
    import papertrack.serving.batch.labeler as labeler

    monkeypatch.setattr(labeler, "LocalBackend", NoModel)


def label(*args: str, **kwargs):
    from papertrack.cli import app

    return CliRunner().invoke(app, ["label", *args, "--no-progress"], **kwargs)


def flat(text: str) -> str:
    return " ".join(text.split())


def dump(path: Path, n: int = 5) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"p{i}", "abstract": f"{ABSTRACT} Variant {i}."}) + "\n" for i in range(n)),
        encoding="utf-8",
    )
    return path


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


# --------------------------------------------------------------------------- 1. one writer per output


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


# --------------------------------------------------------------------------- 2./13. never write over an input


def test_label_output_equal_to_an_input_is_one_clear_error(tmp_path, no_model):
    source = dump(tmp_path / "in.jsonl")
    before = source.read_bytes()
    result = label(str(source), "-o", str(source))
    assert result.exit_code == 2
    assert error_lines(result.output) == [
        f"error: -o {source} is one of the inputs (labeling would destroy it); choose another output"
    ]
    assert "left unchanged" not in result.output and "note:" not in result.output
    assert source.read_bytes() == before


def test_suggest_never_writes_over_its_input(tmp_path, monkeypatch):
    import papertrack.serving.batch.suggest_command as command

    monkeypatch.setattr(command, "load_model", NoModel)
    from papertrack.cli import app

    source = tmp_path / "dump.txt"
    source.write_text("Header\n\n" + "\n\n".join(f"{ABSTRACT} Variant {i}." for i in range(5)) + "\n")
    before = source.read_bytes()
    link = tmp_path / "link.txt"
    link.symlink_to(source)
    for target in (source, link):
        result = CliRunner().invoke(app, ["suggest", str(source), "-o", str(target), "-n", "2"])
        assert result.exit_code == 2, result.output
        assert "is one of the inputs" in flat(result.output) and "choose another output" in flat(result.output)
    assert source.read_bytes() == before


# --------------------------------------------------------------------------- 3. lone surrogate escapes


SURROGATE_LINES = [
    json.dumps({"id": "ok-1", "abstract": ABSTRACT}),
    '{"id": "bad\\udc00id", "abstract": "A fine abstract about kernels and graphs."}',
    '{"id": "bad-title", "title": "T\\ud800", "abstract": "Another fine abstract about graphs."}',
    '{"id": "bad-abstract", "abstract": "Graph \\udfff networks for molecules."}',
    json.dumps({"id": "ok-2", "abstract": ABSTRACT + " Second."}),
]


def test_a_lone_surrogate_is_one_error_row_and_the_run_finishes(tmp_path, fake_model):
    source = tmp_path / "s.jsonl"
    source.write_text("\n".join(SURROGATE_LINES) + "\n", encoding="utf-8")
    for name in ("out.jsonl", "out.csv"):
        result = label(str(source), "-o", str(tmp_path / name))
        assert result.exit_code == 3, result.output
        assert "3 errors" in flat(result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit)
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    errors = [json.loads(line) for line in (tmp_path / "out.errors.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["ok-1", "ok-2"]
    assert [(e["line"], e["id"]) for e in errors] == [(2, "bad\\udc00id"), (3, "bad-title"), (4, "bad-abstract")]
    assert all(e["source"] == str(source) and "lone surrogate" in e["reason"] for e in errors)
    assert "'title'" in errors[1]["reason"] and "\\ud800" in errors[1]["reason"]


def test_a_lone_surrogate_in_training_data_is_a_clear_fatal_error(tmp_path):
    source = tmp_path / "train.jsonl"
    source.write_text(
        json.dumps({"abstract": ABSTRACT, "label": "Theory"})
        + "\n"
        + '{"abstract": "Kernels \\udc00 and graphs.", "label": "Theory"}\n',
        encoding="utf-8",
    )
    with pytest.raises(IngestError, match=r"train.jsonl:2: field 'abstract' holds the lone surrogate escape \\udc00"):
        load_dataset([source])
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"abstract": "Kernels and graphs.", "label": "Theory \\ud83d"}\n', encoding="utf-8")
    with pytest.raises(IngestError, match="field 'label' holds the lone surrogate"):
        load_dataset([labels])


def test_suggest_pool_reports_a_lone_surrogate_instead_of_crashing(tmp_path):
    from papertrack.serving.batch.suggest import read_pool

    source = tmp_path / "s.jsonl"
    source.write_text("\n".join(SURROGATE_LINES) + "\n", encoding="utf-8")
    pool = read_pool([source])
    assert [r.id for r in pool.records] == ["ok-1", "ok-2"]
    assert [(b.line, "lone surrogate" in b.reason) for b in pool.bad] == [(2, True), (3, True), (4, True)]


# --------------------------------------------------------------------------- 4. CSV injection


def test_csv_output_cells_cannot_start_a_formula(tmp_path, fake_model):
    source = tmp_path / "evil.jsonl"
    evil = [('=HYPERLINK("http://x")', "=1+2"), ("+cmd", "-2+3"), ("@SUM(A1)", "\tTab"), ("-ok", "\rCR")]
    source.write_text(
        "".join(
            json.dumps({"id": i, "title": t, "abstract": ABSTRACT + f" {n}.", "label": "Theory"}) + "\n"
            for n, (i, t) in enumerate(evil)
        ),
        encoding="utf-8",
    )
    result = label(str(source), "-o", str(tmp_path / "x.csv"))
    assert result.exit_code == 0, result.output
    with open(tmp_path / "x.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ['\'=HYPERLINK("http://x")', "'+cmd", "'@SUM(A1)", "'-ok"]
    assert [r["title"] for r in rows][:3] == ["'=1+2", "'-2+3", "Tab"]  # titles are whitespace-normalised
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row.values()), row


def test_spreadsheet_safe_prefixes_only_formula_starts():
    from papertrack.features.spreadsheet import spreadsheet_safe

    assert [spreadsheet_safe(t) for t in ("=1", "+1", "-1", "@a", "\t1", "\r1", "a=1", "", "'=1")] == [
        "'=1",
        "'+1",
        "'-1",
        "'@a",
        "'\t1",
        "'\r1",
        "a=1",
        "",
        "'=1",
    ]


def test_a_label_starting_with_a_formula_character_is_safe_in_the_csv(tmp_path, fake_model):
    source = tmp_path / "l.jsonl"
    source.write_text(json.dumps({"id": "a", "abstract": ABSTRACT, "label": "=cmd · +run"}) + "\n", encoding="utf-8")
    result = label(str(source), "-o", str(tmp_path / "l.csv"))
    with open(tmp_path / "l.csv", newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["label"].startswith("'="), (row, result.output)


# --------------------------------------------------------------------------- 5. symlinks at temporary names


@pytest.mark.parametrize("name", ["out.jsonl.partial", "out.errors.jsonl.partial", "out.jsonl.checkpoint.json.tmp"])
def test_a_symlink_planted_at_a_temporary_name_is_not_followed(tmp_path, fake_model, name):
    victim = tmp_path / "precious.txt"
    victim.write_text("do not touch\n")
    (tmp_path / name).symlink_to(victim)
    result = label(str(dump(tmp_path / "in.jsonl")), "-o", str(tmp_path / "out.jsonl"))
    assert victim.read_text() == "do not touch\n"
    assert result.exit_code == 2, result.output
    assert "symbolic link" in flat(result.output) and name in flat(result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit)


def interrupted_run(tmp_path, monkeypatch):
    """A 20-record input and a run on it stopped (Ctrl-C) after its first chunk of 5: (input, output)."""
    source = dump(tmp_path / "in.jsonl", 20)
    out = tmp_path / "out.jsonl"
    real_label = FakeBackend.label
    calls = []

    def crash_after_one_chunk(self, records, k):
        calls.append(len(records))
        if len(calls) > 1:
            raise KeyboardInterrupt()
        return real_label(self, records, k)

    monkeypatch.setattr(FakeBackend, "label", crash_after_one_chunk)
    assert label(str(source), "-o", str(out), "--chunk-size", "5").exit_code == 130
    monkeypatch.setattr(FakeBackend, "label", real_label)
    return source, out


def test_resume_does_not_follow_a_symlink_at_the_partial_file(tmp_path, fake_model, monkeypatch):
    source, out = interrupted_run(tmp_path, monkeypatch)
    victim = tmp_path / "precious.txt"
    victim.write_bytes(out.with_name("out.jsonl.partial").read_bytes())
    out.with_name("out.jsonl.partial").unlink()
    out.with_name("out.jsonl.partial").symlink_to(victim)
    before = victim.read_bytes()
    result = label(str(source), "-o", str(out), "--chunk-size", "5", "--resume")
    assert result.exit_code == 2 and "symbolic link" in flat(result.output)
    assert victim.read_bytes() == before


# --------------------------------------------------------------------------- 6. -o a folder


def test_output_that_is_a_folder_is_refused_up_front(tmp_path, no_model):
    folder = tmp_path / "out.jsonl"
    folder.mkdir()
    result = label(str(dump(tmp_path / "in.jsonl")), "-o", str(folder))
    assert result.exit_code == 2
    assert error_lines(result.output) == [
        f"error: -o {folder} is a folder; name a file in it, e.g. {folder / 'labeled.jsonl'}"
    ]
    errors_folder = tmp_path / "x.errors.jsonl"
    errors_folder.mkdir()
    result = label(str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "x.jsonl"))
    assert result.exit_code == 2 and "is a folder" in flat(result.output)


# --------------------------------------------------------------------------- 7. UTF-16 / UTF-32 input


@pytest.mark.parametrize(
    "encoding,name",
    [
        ("utf-16", "UTF-16"),
        ("utf-16-le", "UTF-16"),
        ("utf-16-be", "UTF-16"),
        ("utf-32", "UTF-32"),
        ("utf-32-le", "UTF-32"),
    ],
)
def test_utf16_input_is_named_with_the_conversion(tmp_path, encoding, name):
    source = tmp_path / "dump.jsonl"
    source.write_text(json.dumps({"id": "a", "abstract": ABSTRACT}) + "\n", encoding=encoding)
    with pytest.raises(IngestError) as caught:
        list(iter_records(source))
    message = str(caught.value)
    assert f"{name} text, not UTF-8" in message and f"iconv -f {name} -t UTF-8 {source}" in message
    assert "not valid UTF-8" not in message


def test_utf16_input_to_the_label_command(tmp_path, no_model):
    source = tmp_path / "dump.txt"
    source.write_text(f"{ABSTRACT}\n\n{ABSTRACT} Again.\n", encoding="utf-16")
    result = label(str(source), "-o", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 2
    (line,) = error_lines(result.output)
    assert "UTF-16" in line and "iconv -f UTF-16 -t UTF-8" in line


def test_plain_utf8_with_a_bom_is_still_read(tmp_path):
    source = tmp_path / "dump.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + (json.dumps({"id": "a", "abstract": ABSTRACT}) + "\n").encode())
    (record,) = list(iter_records(source))
    assert isinstance(record, Record) and record.id == "a"


# --------------------------------------------------------------------------- 11. arguments before the model


def test_every_argument_is_checked_before_the_model_loads(tmp_path, no_model):
    source = dump(tmp_path / "in.jsonl")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    cases = {
        "missing.jsonl: file not found": [str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "o.jsonl")],
        "empty.jsonl: file is empty": [str(empty), "-o", str(tmp_path / "o.jsonl")],
        "must end in .jsonl or .csv": [str(source), "-o", str(tmp_path / "o.txt")],
        "is one of the inputs": [str(source), "-o", str(source)],
        "cannot write": [str(source), "-o", str(blocker / "o.jsonl")],
        "unknown format": [str(source), "-o", str(tmp_path / "o.jsonl"), "--format", "xml"],
    }
    for expected, args in cases.items():
        result = label(*args)
        assert result.exit_code == 2, (expected, result.output, result.exception)
        assert expected in flat(result.output), (expected, result.output)
        assert len(error_lines(result.output)) == 1 and "Traceback" not in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_an_unwritable_folder_is_refused_before_the_model_loads(tmp_path, no_model):
    source = dump(tmp_path / "in.jsonl")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = label(str(source), "-o", str(folder / "o.jsonl"))
    finally:
        folder.chmod(0o755)
    assert result.exit_code == 2 and "not writable" in flat(result.output)


# --------------------------------------------------------------------------- 12. an alias that does not exist


def test_a_misspelt_alias_lists_the_aliases_that_exist(trained, tmp_path):
    source = dump(tmp_path / "in.jsonl")
    result = label(str(source), "-o", str(tmp_path / "o.jsonl"), "--model", "models:/papertrack@chalenger")
    assert result.exit_code == 1
    (line,) = error_lines(result.output)
    assert "no alias 'chalenger'" in line and "champion = version 1" in line and ".." not in line, line
    assert "--model champion" in line
