"""Commands creating one new store at the same moment (two `papertrack train` on a new PAPERTRACK_HOME) do not
collide."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

RACER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    go, ready = Path(sys.argv[1]), Path(sys.argv[2])
    ready.touch()
    while not go.exists():
        time.sleep(0.001)
    from papertrack import store
    store.open()
    print("ok")
""")


@pytest.mark.slow
def test_commands_creating_one_new_store_at_once_do_not_collide(tmp_path):
    """Two `papertrack train` at once on a new store: OperationalError: table registered_model_tags already
    exists. MLflow is imported first in every racer, then all create the store at the same moment."""
    import os

    failures = []
    for attempt in range(2):
        home, go = tmp_path / f"home{attempt}", tmp_path / f"go{attempt}"
        env = {**os.environ, "PAPERTRACK_HOME": str(home)}
        env.pop("MLFLOW_TRACKING_URI", None)
        ready = [tmp_path / f"ready{attempt}-{i}" for i in range(4)]
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", "import mlflow, sqlalchemy\n" + RACER, str(go), str(flag)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for flag in ready
        ]
        deadline = time.monotonic() + 120
        while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
            time.sleep(0.05)  # every racer has imported mlflow and waits
        go.touch()
        for racer in racers:
            out, err = racer.communicate(timeout=180)
            if racer.returncode != 0:
                failures.append(err.strip().splitlines()[-1])
    assert not failures, failures
