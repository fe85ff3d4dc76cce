"""Issue "Fits the hand": quiet output by default (7), help text at 80 columns (8), a subarea typo's nearest
known track (9), labeled input that overlaps the model's training data (10), one CSV format for the page and
the CLI (2)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from papertrack.features.labels import nearest_known_label, normalise_label

COMMANDS = ["train", "runs", "serve", "build", "label", "suggest", "tracking-server"]


def help_text(*args: str) -> str:
    from papertrack.cli import app

    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


# --------------------------------------------------------------------------- 8. help text


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_is_plain_and_fits_80_columns(command):
    text = help_text(*([command] if command else []))
    too_long = [line for line in text.splitlines() if len(line) > 80]
    assert not too_long, too_long
    assert "<list[" not in text and "<str>" not in text and "<path>" not in text
    assert not re.search(r"\{[a-z_]+\}", text), text  # typer's {dumps}... placeholder
    cut = [line for line in text.splitlines() if "…" in line or (re.search(r"[a-z]\.\.\.$", line)
                                                                    and not line.startswith("Usage:"))]
    assert not cut, cut  # no description or default cut short


def test_help_keeps_bracketed_extras_and_whole_defaults():
    label = " ".join(help_text("label").split())
    assert "needs the [spark] extra" in label
    assert "Usage: papertrack label [OPTIONS] DUMPS..." in label
    assert "[default: models:/papertrack@champion]" in label
    assert "-o, --output PATH" in label and "--spark-conf TEXT" in label
    assert "needs the [team] extra" in " ".join(help_text("tracking-server").split())
    train = " ".join(help_text("train").split())
    assert "-d, --data PATH" in train and "iclr2025_dev_topics.jsonl" in train
    top = " ".join(help_text().split())
    assert "-v, --verbose" in top and "refit the best, register it." in top


# --------------------------------------------------------------------------- 7. quiet by default


def test_quiet_libraries_filters_the_known_notices(monkeypatch):
    from papertrack import cli

    for key in cli.QUIET_ENV:
        monkeypatch.delenv(key, raising=False)
    cli.quiet_libraries(verbose=False)
    assert os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] == "false"
    assert logging.getLogger("mlflow").getEffectiveLevel() >= logging.WARNING
    assert logging.getLogger("alembic").getEffectiveLevel() >= logging.WARNING
    record = logging.LogRecord("mlflow.pyfunc", logging.WARNING, __file__, 1,
                               "Passing a Python object as `python_model` causes it to be serialized", None, None)
    assert not logging.getLogger("mlflow.pyfunc").filter(record)


def test_papertrack_warnings_reach_the_console_as_warning_lines(capsys):
    from papertrack import cli

    cli.quiet_libraries(verbose=False)
    logging.getLogger("papertrack.features.labels").warning("something to fix")
    assert "warning: something to fix" in capsys.readouterr().err


# --------------------------------------------------------------------------- 9. subarea typos


def test_nearest_known_label():
    assert nearest_known_label("Theory · Learning Theroy") == "Theory · Learning Theory"
    assert nearest_known_label("theory -> learning theroy") == "Theory · Learning Theory"
    assert nearest_known_label("Theroy · Learning Theory") == "Theory · Learning Theory"
    assert nearest_known_label("Theroy") == "Theory"
    assert nearest_known_label("Theory · Learning Theory") is None  # known
    assert nearest_known_label("Theory · Quantum Foundations") is None  # nothing close: a new track


def test_a_subarea_typo_is_reported_once_with_the_nearest_track(tmp_path, caplog):
    from papertrack.features import labels
    from papertrack.features.ingest import load_dataset

    labels._warned.discard(("Theory", "Learning Theroy"))
    data = tmp_path / "typo.jsonl"
    rows = [{"abstract": f"We bound the sample complexity of learning {i}.", "label": "Theory · Learning Theroy"}
            for i in range(3)] + [{"abstract": "A new optimiser.", "label": "Optimization · Non-Convex"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="papertrack"):
        records, _ = load_dataset(data)
    assert [r.label for r in records][0] == "Theory · Learning Theroy"  # kept as written (a new track)
    messages = [r.getMessage() for r in caplog.records if "did you mean" in r.getMessage()]
    assert messages == ["label 'Theory · Learning Theroy': 'Learning Theroy' is not a subarea of Theory; "
                        "did you mean 'Theory · Learning Theory'? (kept as a track of its own)"]
    assert normalise_label("Theory · Learning Theory") == ("Theory", "Learning Theory")
