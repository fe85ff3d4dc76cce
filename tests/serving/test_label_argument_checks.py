"""`papertrack label` checks every argument before the model loads (one ``error:`` line each), refuses an
unwritable folder up front, and names the aliases that exist when the one asked for does not."""

from __future__ import annotations

import os

import pytest

from tests.serving.label_cli import dump, error_lines, flat, label


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


# --------------------------------------------------------------------------- an alias that does not exist


def test_a_misspelt_alias_lists_the_aliases_that_exist(trained, tmp_path):
    source = dump(tmp_path / "in.jsonl")
    result = label(str(source), "-o", str(tmp_path / "o.jsonl"), "--model", "models:/papertrack@chalenger")
    assert result.exit_code == 1
    (line,) = error_lines(result.output)
    assert "no alias 'chalenger'" in line and "champion = version 1" in line and ".." not in line, line
    assert "--model champion" in line
