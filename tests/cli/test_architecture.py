"""The dependency arrows of the package at run time. The static rules (features → models → {training, serving},
``papertrack/``'s settings, errors, store and registry as the thin shared layer, serving's ``http`` and ``batch``
never importing each other) are import-linter contracts (``[tool.importlinter]`` in pyproject.toml, checked by
``lint-imports`` in scripts/test.sh); here: importing the service and the labeler in a fresh interpreter loads
neither the training side nor matplotlib, and the two serving runtimes load apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a fresh interpreter importing the stack
def test_serving_loads_neither_training_nor_matplotlib():
    code = (
        "import json, sys\n"
        "import papertrack.serving.http.service, papertrack.serving.batch.labeler\n"
        "print(json.dumps(sorted(n for n in sys.modules if n.startswith('papertrack.training') "
        "or n.split('.')[0] == 'matplotlib')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == [], f"serving loaded {loaded}"


@pytest.mark.slow  # a fresh interpreter importing the stack
def test_serving_runtimes_load_apart():
    """At run time too: the batch commands and engines load no HTTP module, the service no batch module."""
    code = (
        "import json, sys\n"
        "import papertrack.serving.batch.label_command, papertrack.serving.batch.suggest_command\n"
        "import papertrack.serving.batch.labeler.spark, papertrack.serving.batch.drift_report\n"
        "batch = sorted(n for n in sys.modules if n.startswith('papertrack.serving.http'))\n"
        "for name in [n for n in sys.modules if n.startswith('papertrack.serving')]:\n"
        "    del sys.modules[name]\n"
        "import papertrack.serving.http.service, papertrack.serving.http.serve_command\n"
        "http = sorted(n for n in sys.modules if n.startswith('papertrack.serving.batch'))\n"
        "print(json.dumps([batch, http]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [[], []]


def test_request_schemas_load_neither_mlflow_nor_pandas():
    code = (
        "import json, sys\nimport papertrack.serving.http.schemas\n"
        "print(json.dumps(sorted(n for n in ('mlflow', 'pandas') if n in sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
