"""Fixtures shared by several CLI test modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.hostile_cases import LABEL, REPO


# the hostile-input corpus, generated once per test process for the modules that run it (it is only read: the runs
# that try to write into it through planted links are refused, which test_hostile_corpus_label_suggest_train.py checks)
@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hostile") / "corpus"
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "hostile_corpus.py"), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    assert set(LABEL) | {"planted.jsonl"} == set(manifest["cases"])  # every case is checked
    return folder
