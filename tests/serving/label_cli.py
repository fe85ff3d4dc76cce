"""Helpers for the tests of `papertrack label` (and `suggest`) on a real or a fake model: the CLI run in process,
small dumps, the ``error:`` lines of an output, a backend that must never be built, and a run interrupted after
its first chunk."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import FakeBackend

ABSTRACT = "We study graph neural networks and message passing for molecules, with a new benchmark."


class NoModel:
    """A backend that must never be built: the run should have stopped before loading the model."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("the model was loaded before the arguments were checked")


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
