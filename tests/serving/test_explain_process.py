"""A worker's explanation process (serving/http/explain_process.py) ends with the worker, however the worker ends:
before, a worker killed or stopped by BentoML left its forked child running (~500 MB each, holding the listening
socket; 20 were found after a day of tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

WORKER = textwrap.dedent(
    """
    import time
    from papertrack.serving.http.explain_process import ExplainProcess

    class Predictor:
        taxonomy = None

    explainer = ExplainProcess(Predictor())
    print(explainer.pid(), flush=True)
    time.sleep(120)
    """
)


def kill_if_left(pid: int) -> None:
    """Our own child process, by its PID, when a failing test left it behind."""
    if not gone_within(pid, 0):
        os.kill(pid, signal.SIGKILL)


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split()[2] == "Z":
                    return True  # a zombie: ended, waiting for its new parent to reap it
        except FileNotFoundError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_the_child_ends_with_its_worker(how, tmp_path):
    worker = subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    child = int(worker.stdout.readline())
    try:
        assert child != worker.pid and not gone_within(child, 0.5)  # alive while the worker is
        worker.send_signal(how)
        worker.wait(timeout=30)
        assert gone_within(child, 5.0), f"the explanation process {child} outlived its worker ({how.name})"
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        kill_if_left(child)


def test_sigint_is_left_to_the_worker(tmp_path):
    """A Ctrl-C reaches the terminal's whole process group: the child ignores it (no traceback of its own), the
    worker decides when to stop."""
    worker = subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    child = int(worker.stdout.readline())
    try:
        os.kill(child, signal.SIGINT)
        assert not gone_within(child, 1.0)
    finally:
        worker.kill()
        worker.wait()
        assert gone_within(child, 5.0)
        kill_if_left(child)
