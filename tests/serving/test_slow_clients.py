"""A client that never finishes its request body is answered and disconnected at BentoML's ``traffic.timeout``
(the service's own configuration: it bounds a request from its headers to its answer, body reading included).

What the service leaves to the reverse proxy in front of it (deploy/nginx.conf, tested with the proxy): clients
that send their headers byte by byte or stall inside them (uvicorn has no header timeout), clients that never read
their answer, and oversized or chunked bodies before they reach a worker (nginx buffers whole requests). Every
test here is bounded in time: the sockets have timeouts and the server is stopped by PID."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import free_port, stop, wait_http

SLACK = 2.0  # the event loop of a loaded 2-core machine may fire a timer late


def answered_and_closed(sock: socket.socket, started: float) -> tuple[float, float, bytes]:
    """(seconds from ``started`` until the first byte of an answer, until the server closed ``sock``, what it
    sent): reads until EOF; fails on the socket's timeout, which bounds the test."""
    received, first = b"", None
    try:
        while chunk := sock.recv(4096):
            first = first or time.monotonic() - started
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail("the server kept the stalled connection open")
    return first or float("nan"), time.monotonic() - started, received


# --------------------------------------------------------------------------- the real server


@pytest.mark.slow
def test_papertrack_serve_disconnects_a_stalled_client(trained, tmp_path):
    """`papertrack serve` with traffic.timeout 3 s (BENTOML_CONFIG_OPTIONS): a client stalled inside its body is
    answered 504 at the bound, and the connection closed by uvicorn's keep-alive timeout (5 s) after that answer;
    /healthz still answers."""
    port = free_port()
    env = {
        **os.environ,
        "BENTOML_HOME": str(tmp_path / "bentoml"),
        "PAPERTRACK_HOME": str(trained["home"]),
        "BENTOML_CONFIG_OPTIONS": "services.papertrack.traffic.timeout=3",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("PAPERTRACK_BENTO_MODEL", None)
    log = tmp_path / "serve.log"
    papertrack = str(Path(sys.executable).with_name("papertrack"))
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [papertrack, "serve", "--port", str(port), "--workers", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz", proc, log)
        request = (
            b"POST /predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 500\r\n\r\n{"abstract": "'
        )
        with socket.create_connection(("127.0.0.1", port), timeout=3 + 5 + SLACK + 5) as sock:
            started = time.monotonic()
            sock.sendall(request)
            answered, closed, answer = answered_and_closed(sock, started)
        assert answer.startswith(b"HTTP/1.1 504"), answer[:200]
        assert 3 * 0.8 < answered < 3 + SLACK, answered
        assert closed < answered + 5 + SLACK, (answered, closed)
        import httpx

        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
    finally:
        stop(proc)
