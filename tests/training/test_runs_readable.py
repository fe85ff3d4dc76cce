"""`papertrack runs` a person can read at 80 columns: every candidate's full name and 3-decimal metrics, the serving
champion marked in every view (also when it comes from an earlier sweep), and while a training runs, the last
finished sweep plus "a sweep is running". A store with hand-made runs: no training needed."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

LONG_NAMES = ("tfidf-char-svd256-lightgbm", "ensemble-tfidf-minilm", "embedding-minilm+pca", "tfidf-word-logreg")


def _candidate(client, experiment_id, sweep_id, name, top3, digest="d1"):
    tags = {"papertrack.kind": "candidate", "candidate": name, "family": "tfidf", "mlflow.parentRunId": sweep_id}
    run = client.create_run(experiment_id, tags=tags, run_name=name)
    metrics = {
        "temporal_label_top3": top3,
        "temporal_label_top1": top3 / 2,
        "temporal_area_top1": 0.612345,
        "cv_label_top3": top3 - 0.01,
        "cv_area_top1": 0.6,
        "cv_label_macro_f1": 0.3,
        "temporal_label_macro_f1": 0.3,
        "predict_ms_per_abstract": 1.234,
        "temporal_label_top3.ICML 2025": top3 - 0.05,
        "known_label_top3.ICML 2025": top3 - 0.02,
    }
    for key, value in metrics.items():
        client.log_metric(run.info.run_id, key, value)
    client.log_param(run.info.run_id, "data_digest", digest)
    client.set_terminated(run.info.run_id)
    return run.info.run_id


@pytest.fixture
def store_with_sweeps(sweeps_made_once, tmp_path, monkeypatch):
    """An old finished sweep (its winner registered as champion), a newer finished one (its winner challenger) and
    a third still running, with no finished candidate: the module's store, copied for the test (which may add runs)."""
    import shutil

    ids, made = sweeps_made_once
    shutil.copytree(made, tmp_path / "home")
    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return ids


@pytest.fixture(scope="module")
def sweeps_made_once(tmp_path_factory):
    """The run ids of :func:`store_with_sweeps` and the folder of the store that holds them, made once a module."""
    home = tmp_path_factory.mktemp("sweeps") / "home"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        ids = _make_sweeps(home, home.parent)
    return ids, home


def _make_sweeps(home, tmp_path) -> dict:
    from papertrack import settings, store

    opened = store.open(home=home)
    client = opened.client()
    experiment_id = opened.experiment().experiment_id
    old = client.create_run(experiment_id, tags={"papertrack.kind": "sweep"}, run_name="sweep-1").info.run_id
    champion_run = _candidate(client, experiment_id, old, "tfidf-word-logreg", 0.7123)
    client.set_terminated(old)
    new = client.create_run(experiment_id, tags={"papertrack.kind": "sweep"}, run_name="sweep-2").info.run_id
    runs = [_candidate(client, experiment_id, new, name, 0.7 - i / 100) for i, name in enumerate(LONG_NAMES)]
    client.set_terminated(new)
    client.create_run(experiment_id, tags={"papertrack.kind": "sweep"}, run_name="sweep-3")  # running
    client.create_registered_model(settings.MODEL_NAME)
    for run_id, alias in ((champion_run, settings.CHAMPION), (runs[-1], settings.CHALLENGER)):
        version = client.create_model_version(settings.MODEL_NAME, str(tmp_path), run_id=run_id)
        client.set_model_version_tag(settings.MODEL_NAME, version.version, "run_id", run_id)
        client.set_registered_model_alias(settings.MODEL_NAME, alias, version.version)
    return {"champion": champion_run, "challenger": runs[-1], "new": new}


def _runs(monkeypatch, *args: str, width: int = 80) -> list[str]:
    from papertrack.cli import app
    from papertrack.training import commands

    recorded = Console(width=width, record=True, file=io.StringIO())
    monkeypatch.setattr(commands, "console", recorded)
    result = CliRunner().invoke(app, ["runs", *args])
    assert result.exit_code == 0, result.output
    return (recorded.export_text() + result.output).splitlines()


def _fits(lines: list[str], width: int = 80) -> bool:
    return all(len(line) <= width for line in lines if not line.startswith("open http"))


def test_runs_at_80_columns_shows_full_names_three_decimals_and_the_champion_of_an_earlier_sweep(
    store_with_sweeps, monkeypatch
):
    lines = _runs(monkeypatch)
    assert _fits(lines) and not any("…" in line for line in lines)
    rows = {line.split()[-6] if line[0] in "*+" else line.split()[0]: line for line in lines if " 0." in line}
    for name in LONG_NAMES:
        assert name in rows, (name, lines)
    assert rows["tfidf-char-svd256-lightgbm"].split()[1:5] == ["0.700", "0.350", "0.612", "0.690"]
    champion = [line for line in lines if line.startswith("*")]
    assert len(champion) == 1 and "tfidf-word-logreg" in champion[0] and "0.712" in champion[0]
    assert [line for line in lines if line.startswith("+")][0].split()[1] == "tfidf-word-logreg"
    assert any(line.startswith("a sweep is running (started ") for line in lines)
    assert "The table shows the last finished sweep." in lines


def test_runs_all_marks_the_champion_and_fits_80_columns(store_with_sweeps, monkeypatch):
    lines = _runs(monkeypatch, "--all")
    assert _fits(lines)
    assert sum(line.startswith("*") for line in lines) == 1 and sum(line.startswith("+") for line in lines) == 1


def test_runs_wide_has_every_taxonomys_columns(store_with_sweeps, monkeypatch):
    lines = _runs(monkeypatch, "--wide")
    header = next(line for line in lines if "candidate" in line)
    assert "ICML 2025 next3" in header and "ICML 2025 known3" in header and "…" not in "".join(lines)


def test_runs_json_marks_the_champion_and_the_challenger(store_with_sweeps, monkeypatch):
    from papertrack.cli import app

    result = CliRunner().invoke(app, ["runs", "--json"])
    rows = json.loads(result.output)
    assert [row["run_id"] for row in rows if row["champion"]] == [store_with_sweeps["champion"]]
    assert [row["run_id"] for row in rows if row["challenger"]] == [store_with_sweeps["challenger"]]


def test_runs_while_the_first_sweep_runs_says_so_instead_of_train_first(tmp_path, monkeypatch):
    from papertrack import store

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    opened = store.open()
    opened.client().create_run(opened.experiment().experiment_id, tags={"papertrack.kind": "sweep"})
    text = " ".join(" ".join(_runs(monkeypatch)).split())
    assert "a sweep is running" in text and "no sweep has finished yet" in text and "train first" not in text


def test_a_later_failed_or_abandoned_sweep_is_named_and_the_last_finished_one_shown(store_with_sweeps, monkeypatch):
    """A sweep that ended FAILED, or that stayed RUNNING after its process ended (killed, disk full), is not 'running':
    runs shows the last finished sweep and says a later one failed."""
    import socket
    import subprocess
    import sys

    import psutil

    from papertrack import registry, store

    opened = store.open()
    client, experiment_id = opened.client(), opened.experiment().experiment_id
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    gone = f"{child.pid}@{socket.gethostname()} started {psutil.Process(child.pid).create_time():.2f}"
    child.wait()
    for run in client.search_runs(
        [experiment_id], "tags.`papertrack.kind` = 'sweep' and attributes.status = 'RUNNING'"
    ):
        client.set_tag(run.info.run_id, registry.OWNER_TAG, gone)  # sweep-3: its train was killed
    failed = client.create_run(experiment_id, tags={"papertrack.kind": "sweep"}, run_name="sweep-4").info.run_id
    client.set_terminated(failed, "FAILED")
    text = " ".join(" ".join(_runs(monkeypatch)).split())
    assert "a later sweep failed (started " in text and f"run {failed[:8]}" in text
    assert "a sweep is running" not in text
    assert all(name in text for name in LONG_NAMES)  # sweep-2, the last finished one
