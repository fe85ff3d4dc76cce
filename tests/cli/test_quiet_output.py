"""Quiet output by default: the libraries' known notices are filtered, papertrack's own warnings reach the console
as ``warning:`` lines, and `train` and `label` print none of MLflow's noise (a subarea typo is still reported)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_quiet_libraries_filters_the_known_notices(monkeypatch):
    from papertrack import cli

    for key in cli.QUIET_ENV:
        monkeypatch.delenv(key, raising=False)
    cli.quiet_libraries(verbose=False)
    assert os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] == "false"
    assert logging.getLogger("mlflow").getEffectiveLevel() >= logging.WARNING
    assert logging.getLogger("alembic").getEffectiveLevel() >= logging.WARNING
    record = logging.LogRecord(
        "mlflow.pyfunc",
        logging.WARNING,
        __file__,
        1,
        "Passing a Python object as `python_model` causes it to be serialized",
        None,
        None,
    )
    assert not logging.getLogger("mlflow.pyfunc").filter(record)


def test_papertrack_warnings_reach_the_console_as_warning_lines(capsys):
    from papertrack import cli

    cli.quiet_libraries(verbose=False)
    logging.getLogger("papertrack.features.labels").warning("something to fix")
    assert "warning: something to fix" in capsys.readouterr().err


# --------------------------------------------------------------------------- end to end: train, label


NOISE = ("Downloading artifacts", "WARNING mlflow", "INFO mlflow", "CloudPickle", "Hint: Inferred schema")


@pytest.mark.slow
def test_train_and_label_are_quiet_and_report_a_subarea_typo(labeled_subset, tmp_path):
    data = tmp_path / "data.jsonl"
    typo = {
        "abstract": "We prove generalisation bounds for overparameterised networks via PAC-Bayes.",
        "label": "Theory · Learning Theroy",
    }
    data.write_text(Path(labeled_subset).read_text(encoding="utf-8") + json.dumps(typo) + "\n", encoding="utf-8")
    env = {**os.environ, "PAPERTRACK_HOME": str(tmp_path / "home"), "COLUMNS": "120"}
    env.pop("MLFLOW_TRACKING_URI", None)
    for key in ("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "MLFLOW_LOGGING_LEVEL"):
        env.pop(key, None)
    cli = [sys.executable, "-m", "papertrack.cli"]
    train = subprocess.run(
        [*cli, "train", "-c", "tfidf-word-cnb", "--folds", "2", "--data", str(data)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert train.returncode == 0, train.stdout + train.stderr
    output = train.stdout + train.stderr
    assert "warning: label 'Theory · Learning Theroy'" in output
    assert "did you mean 'Theory · Learning Theory'?" in output
    assert not [n for n in NOISE if n in output], output
    from papertrack import registry_cache
    from papertrack import store as mlstore

    # train kept what the registry answers for the champion: the first label after it starts without MLflow
    cached = registry_cache.lookup(mlstore.open(create=False, home=tmp_path / "home"), "papertrack", "champion")
    assert cached is not None and cached.version == "1"

    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps({"abstract": typo["abstract"]}) + "\n", encoding="utf-8")
    label = subprocess.run(
        [*cli, "label", str(dump), "-o", str(tmp_path / "out.csv")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert label.returncode == 0, label.stdout + label.stderr
    assert not [n for n in NOISE if n in label.stdout + label.stderr], label.stdout + label.stderr

    verbose = subprocess.run(
        [*cli, "-v", "label", str(dump), "-o", str(tmp_path / "out2.csv"), "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert verbose.returncode == 0, verbose.stdout + verbose.stderr
