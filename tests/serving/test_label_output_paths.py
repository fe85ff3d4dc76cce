"""Outputs that must not be written: `label` and `suggest` never write over an input, never follow a symbolic
link planted at a temporary name (also on --resume), and refuse an output that is a folder up front."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tests.serving.label_cli import ABSTRACT, NoModel, dump, error_lines, flat, interrupted_run, label


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


# --------------------------------------------------------------------------- symbolic links at temporary names


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


# --------------------------------------------------------------------------- -o a folder


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
