"""Slow clients are disconnected (issue 19 item 12): a client that sends its headers byte by byte, stalls
before the end of its headers or never finishes its body held a connection forever (uvicorn has no request
read timeout; BentoML's traffic.timeout starts after the headers). Every test here is bounded in time: the
sockets have timeouts and the servers are stopped by PID.

The first tests run uvicorn with papertrack's protocol and a 0.5 s deadline in a thread of this process; the
last one runs `papertrack serve` (BentoML's own workers) with ``traffic.timeout`` set to 3 s."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.processes import free_port, stop, wait_http

DEADLINE = 0.5
SLACK = 2.0  # the event loop of a loaded 2-core machine may fire a timer late


async def echo_app(scope, receive, send):
    """Reads the whole body, answers its size."""
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    if scope["path"] == "/slow":
        await asyncio.sleep(DEADLINE * 2)
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def deadline_server():
    import uvicorn

    from papertrack.serving.http.read_deadline import RequestDeadlineProtocol

    class OneSecond(RequestDeadlineProtocol):
        seconds = DEADLINE

    port = free_port()
    config = uvicorn.Config(echo_app, host="127.0.0.1", port=port, http=OneSecond, log_level="warning", lifespan="off")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        uv.should_exit = True
        thread.join(timeout=10)


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE + SLACK + 3)
    return sock


def closed_after(sock: socket.socket, started: float) -> float:
    """Seconds from ``started`` until the server closed ``sock`` (reads until EOF; fails on the socket's
    timeout, which bounds the test)."""
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail("the server kept the stalled connection open")
    return time.monotonic() - started


def answer_of(sock: socket.socket, size: int) -> bytes:
    """The echo server's answer to a body of ``size`` bytes (read until its body, the size, is in)."""
    answer = b""
    while not answer.endswith(b"\r\n\r\n%d" % size):
        chunk = sock.recv(4096)
        assert chunk, answer
        answer += chunk
    return answer


def test_a_connection_that_sends_nothing_is_closed(deadline_server):
    with connect(deadline_server) as sock:
        assert closed_after(sock, time.monotonic()) < DEADLINE + SLACK


def test_headers_sent_byte_by_byte_are_cut_off_at_the_deadline(deadline_server):
    """Every byte used to cancel uvicorn's only timer (keep-alive): a trickle held the connection forever."""
    request = b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n" + b"X-Pad: " + b"a" * 400
    with connect(deadline_server) as sock:
        started = time.monotonic()
        try:
            for byte in request:
                sock.send(bytes([byte]))
                time.sleep(0.02)
                if time.monotonic() - started > DEADLINE + SLACK:
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        took = closed_after(sock, started)
    assert DEADLINE * 0.8 < took < DEADLINE + SLACK


def test_a_body_that_never_ends_is_cut_off(deadline_server):
    with connect(deadline_server) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n" + b"b" * 10)
        assert closed_after(sock, started) < DEADLINE + SLACK


def test_whole_requests_are_answered_and_keep_alive_still_works(deadline_server):
    """Requests arriving in time are untouched, also several on one connection and one sent in pieces."""
    with connect(deadline_server) as sock:
        for size in (0, 5, 70_000):
            sock.sendall(b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % size + b"z" * size)
            assert answer_of(sock, size).startswith(b"HTTP/1.1 200")
        sock.sendall(b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(DEADLINE / 3)
        sock.sendall(b"Content-Length: 3\r\n\r\nabc")
        assert answer_of(sock, 3).startswith(b"HTTP/1.1 200")


@pytest.mark.slow  # 1.5 s (--durations)
def test_a_slow_handler_is_not_cut_off_and_the_deadline_restarts_after_its_answer(deadline_server):
    """The deadline is for receiving a request only: an answer that takes twice the deadline still arrives on the
    open connection, and once it is sent the server arms the deadline again — the idle connection is closed one
    deadline after the answer (the server's timer measured, not the handler's sleep)."""
    with connect(deadline_server) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert answer_of(sock, 0).startswith(b"HTTP/1.1 200")  # not closed while the handler ran
        answered = time.monotonic()
        assert answered - started > DEADLINE  # (the precondition: the handler outlasted one deadline)
        took = closed_after(sock, answered)
    assert DEADLINE * 0.8 < took < DEADLINE + SLACK


def test_the_service_installs_the_deadline_and_reads_traffic_timeout():
    from papertrack.serving.http import private_hooks, read_deadline

    saved = private_hooks.uvicorn_auto_protocol()
    try:
        read_deadline.install()
        assert private_hooks.uvicorn_auto_protocol() == "papertrack.serving.http.read_deadline:RequestDeadlineProtocol"
    finally:
        private_hooks.set_uvicorn_auto_protocol(saved)
    assert read_deadline.configured_seconds("no-such-service") == 60.0


# --------------------------------------------------------------------------- the real server


@pytest.mark.slow
def test_papertrack_serve_disconnects_a_stalled_client(trained, tmp_path):
    """`papertrack serve` with traffic.timeout 3 s (BENTOML_CONFIG_OPTIONS): a client stalled inside its
    headers, and one stalled inside its body, are disconnected within the bound; /healthz still answers."""
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
        for request in (
            b"POST /predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty",
            b"POST /predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 500\r\n\r\n{"abstract": "',
        ):
            with socket.create_connection(("127.0.0.1", port), timeout=3 + SLACK + 5) as sock:
                started = time.monotonic()
                sock.sendall(request)
                took = closed_after(sock, started)
            assert took < 3 + SLACK + 2, took
        import httpx

        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
    finally:
        stop(proc)
