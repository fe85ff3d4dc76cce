"""`papertrack runs`: readable at 80 columns, the champion marked, and machine-readable output."""

from __future__ import annotations

import csv
import io
import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

pytestmark = pytest.mark.slow  # uses the trained sweep


def _run(monkeypatch, *args: str, width: int = 80) -> str:
    from papertrack.cli import app
    from papertrack.training import commands

    recorded = Console(width=width, record=True, file=io.StringIO())
    monkeypatch.setattr(commands, "console", recorded)
    result = CliRunner().invoke(app, ["runs", *args])
    assert result.exit_code == 0, result.output
    return recorded.export_text() + result.output


def test_runs_table_fits_80_columns_and_marks_the_champion(trained, monkeypatch):
    text = _run(monkeypatch)
    winner = trained["result"].winner.candidate.name
    lines = text.splitlines()
    # a link is never cut: the MLflow runs view's, on a line of its own, may be longer
    (link,) = [line for line in lines if line.startswith("open http")]
    assert "/runs?workflowType=machine_learning&viewStateShareKey=" in link
    assert all(len(line) <= 80 for line in lines if line != link)
    assert "…" not in text  # nothing cut
    assert any(line.startswith("*") and winner in line for line in lines)
    assert "next3" in text and "ms" in text


def test_runs_json_and_csv_carry_every_column(trained, monkeypatch):
    sweep = trained["result"].parent_run_id  # this sweep's candidates, whatever later tests add to the store
    rows = json.loads(_run(monkeypatch, "--sweep", sweep, "--json"))
    names = {r.candidate.name for r in trained["result"].results}
    assert {row["candidate"] for row in rows} == names
    (champion,) = [row for row in rows if row["champion"]]
    assert champion["run_id"] == trained["result"].winner.run_id
    assert {"temporal_label_top3", "cv_label_top3", "shift_label_top3", "predict_ms_per_abstract"} <= set(champion)
    table = list(csv.DictReader(io.StringIO(_run(monkeypatch, "--sweep", sweep, "--csv"))))
    assert [row["candidate"] for row in table] == [row["candidate"] for row in rows]
    assert float(table[0]["temporal_label_top3"]) == pytest.approx(rows[0]["temporal_label_top3"])


def test_runs_of_an_unknown_sweep_says_so_and_sweep_excludes_all(trained):
    from papertrack.cli import app

    result = CliRunner().invoke(app, ["runs", "--sweep", "0123456789abcdef"])
    assert result.exit_code == 1
    assert "No candidate runs of sweep 0123456789abcdef" in " ".join(result.output.split())
    result = CliRunner().invoke(app, ["runs", "--all", "--sweep", trained["result"].parent_run_id])
    assert result.exit_code == 2 and "choose one of --all and --sweep" in result.output
    result = CliRunner().invoke(app, ["runs", "--sweep", "x' or '1'='1"])  # never reaches MLflow's filter
    assert result.exit_code == 2 and "is not a run id" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_runs_answers_from_the_kept_answer_until_the_store_changes(trained, monkeypatch):
    from papertrack.cli import app
    from papertrack.store import Store

    def asked(*args, **kwargs):
        raise AssertionError("MLflow was asked")

    first = _run(monkeypatch, "--json")  # MLflow's answer (or the one a test before kept), kept
    with monkeypatch.context() as offline:
        offline.setattr(Store, "client", asked)
        assert _run(monkeypatch, "--json") == first  # the store has not changed: MLflow is not asked
    run = json.loads(first)[0]["run_id"]
    trained["store"].client().set_tag(run, "papertrack.test_note", "a tag set through MLflow")
    with monkeypatch.context() as offline:
        offline.setattr(Store, "client", asked)
        result = CliRunner().invoke(app, ["runs", "--json"])
    assert isinstance(result.exception, AssertionError) and "MLflow was asked" in str(result.exception)
    assert json.loads(_run(monkeypatch, "--json")) == json.loads(first)  # asked again: the same board
