"""Helpers for the tests of `papertrack label` (and `suggest`) on a real or a fake model: the CLI run in process,
small dumps and a mixed one (bad lines among good records), the rows of an output and its ``error:`` lines, fake
backends (one that answers by the record, one that must never be built), and a run interrupted after its first
chunk."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from tests.fake_backend import FakeBackend

PAPERTRACK = str(Path(sys.executable).with_name("papertrack"))

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


class RecordBackend(FakeBackend):
    """A fake model whose ranking depends on the record (the abstract's length picks one of three orders), so a
    row written against the wrong record shows."""

    def label(self, records, k):
        answers = super().label(records, k)
        for record, answer in zip(records, answers):
            turn = len(record.abstract) % 3
            answer["tracks"] = (answer["tracks"][turn:] + answer["tracks"][:turn])[:k]
        return answers


def mixed_dump(source: Path, path: Path) -> Path:
    """300 labeled records of ``source`` with bad lines, a record without id and a blank line mixed in."""
    lines = source.read_text(encoding="utf-8").splitlines()[:300]
    extra = {
        3: "{not valid json",
        10: json.dumps({"id": "empty-1", "abstract": "   ", "label": "Deep Learning"}),
        20: json.dumps(["an", "array"]),
        30: json.dumps({"id": "num-1", "abstract": 42}),
        40: json.dumps(
            {
                "abstract": "A record without an id about graph neural networks and message passing.",
                "title": "No id here",
            }
        ),
        50: "",
        60: json.dumps({"id": "bad-label", "abstract": "Some abstract.", "label": "A · B · C"}),
    }
    for position in sorted(extra, reverse=True):
        lines.insert(position, extra[position])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def run_cli(*args: str):
    from papertrack.cli import app

    return CliRunner().invoke(app, ["label", *args, "--no-progress"])
