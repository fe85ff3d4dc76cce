"""The help text of `papertrack` and every command: plain, at most 80 columns, nothing cut short, the bracketed
extras and whole defaults kept."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

COMMANDS = ["train", "runs", "serve", "build", "label", "suggest", "tracking-server", "taxonomies", "crosswalk"]


def help_text(*args: str) -> str:
    from papertrack.cli import app

    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_is_plain_and_fits_80_columns(command):
    text = help_text(*([command] if command else []))
    too_long = [line for line in text.splitlines() if len(line) > 80]
    assert not too_long, too_long
    assert "<list[" not in text and "<str>" not in text and "<path>" not in text
    assert not re.search(r"\{[a-z_]+\}", text), text  # typer's {dumps}... placeholder
    cut = [
        line
        for line in text.splitlines()
        if "…" in line or (re.search(r"[a-z]\.\.\.$", line) and not line.startswith("Usage:"))
    ]
    assert not cut, cut  # no description or default cut short


def test_help_keeps_bracketed_extras_and_whole_defaults():
    label = " ".join(help_text("label").split())
    assert "needs the [spark] extra" in label
    assert "Usage: papertrack label [OPTIONS] DUMPS..." in label
    assert "[default: models:/papertrack@champion]" in label
    assert "-o, --output PATH" in label and "--spark-conf TEXT" in label
    assert "needs the [team] extra" in " ".join(help_text("tracking-server").split())
    train = " ".join(help_text("train").split())
    assert "-d, --data PATH" in train and "every labeled file named *_topics.jsonl" in train
    top = " ".join(help_text().split())
    assert "-v, --verbose" in top and "refit the best, register it." in top
