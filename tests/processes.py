"""Helpers for tests that start servers: a free loopback port, waiting until one answers, and stopping a
process group by PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group it leads (started with a new session), SIGKILL if it lingers."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass


def wait_http(url: str, proc: subprocess.Popen, log: Path, seconds: float = 180) -> None:
    """Poll ``url`` until it answers 200; fail the test (with the log's tail) if ``proc`` exits or time runs out."""
    import httpx

    deadline = time.monotonic() + seconds
    while True:
        if proc.poll() is not None:
            pytest.fail(f"{proc.args} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"{url} not ready after {seconds} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.25)


@contextmanager
def papertrack_serve(env: dict, log: Path, *args: str) -> Iterator[str]:
    """`papertrack serve` (one worker unless ``args`` say otherwise) on a free loopback port with ``env``; yields its
    URL once /readyz answers; stopped by its process group on exit."""
    import sys

    port = free_port()
    command = [str(Path(sys.executable).with_name("papertrack")), "serve", "--port", str(port)]
    command += list(args) or ["--workers", "1"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz", proc, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)
