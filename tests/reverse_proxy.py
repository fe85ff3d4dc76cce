"""nginx from deploy/nginx.conf for the tests (tests/serving/test_reverse_proxy.py): rendered with another listen
port and upstream (and any other change a test names), started as a subprocess with its prefix in a test's folder,
stopped by its PID; and raw HTTP/1.1 over a socket, for what httpx will not send (stalled headers, a body that
never ends, a declared size with no body)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.processes import free_port, stop

NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)
CONF = Path(__file__).resolve().parents[1] / "deploy" / "nginx.conf"


def render(listen: int, upstream: int, changes: dict[str, str]) -> str:
    """deploy/nginx.conf listening on ``listen``, proxying to ``upstream``, with ``changes`` (text -> text)."""
    text = CONF.read_text(encoding="utf-8")
    swaps = {
        "listen 127.0.0.1:8080": f"listen 127.0.0.1:{listen}",
        "server 127.0.0.1:3000;": f"server 127.0.0.1:{upstream};",
        "worker_processes auto;": "worker_processes 1;",
        **changes,
    }
    for old, new in swaps.items():
        assert old in text, f"deploy/nginx.conf has no {old!r} any more"
        text = text.replace(old, new)
    if os.geteuid() == 0:  # as root, nginx's workers become `nobody`, who may not enter pytest's tmp_path
        text = "user root;\n" + text
    return text


@contextmanager
def nginx(prefix: Path, upstream_port: int, **changes: str) -> Iterator[dict]:
    """nginx from deploy/nginx.conf on a free port in front of ``upstream_port``; yields its URL, prefix and
    process once it accepts connections; stopped by its process group on exit."""
    assert NGINX is not None, "nginx is not installed: apt-get install -y nginx-light"
    prefix.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = prefix / "nginx.conf"
    conf.write_text(render(port, upstream_port, changes), encoding="utf-8")
    out = prefix / "nginx.out"
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            [NGINX, "-p", str(prefix), "-c", str(conf), "-e", "error.log", "-g", "daemon off;"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, f"nginx exited with {proc.returncode}: {out.read_text()}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"nginx did not listen on {port}: {out.read_text()}"
                time.sleep(0.05)
        yield {"url": f"http://127.0.0.1:{port}", "port": port, "prefix": prefix, "proc": proc}
    finally:
        stop(proc)


def nothing_listens() -> int:
    return free_port()  # nothing listens there once the probe socket is closed


def json_head(path: str, length: int) -> str:
    return f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nContent-Length: {length}\n"


def raw_request(port: int, head: str, body: bytes = b"", timeout: float = 10) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(head.replace("\n", "\r\n").encode("latin-1") + b"\r\n" + body)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything until the peer closes (fails on the socket's timeout, which bounds the test)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail(f"the connection was not closed; received {data[:300]!r}")
    return data


def read_answer(sock: socket.socket) -> httpx.Response:
    """One answer (up to its Content-Length), without waiting for the connection to close: after refusing a body
    nginx keeps the connection a few seconds to read and drop what the client still sends (lingering close)."""
    data = b""
    while True:
        head, found, body = data.partition(b"\r\n\r\n")
        if found and len(body) >= int(as_response(data).headers.get("content-length", 0)):
            return as_response(data)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            pytest.fail(f"no whole answer; received {data[:300]!r}")
        assert chunk, f"closed before a whole answer: {data[:300]!r}"
        data += chunk


def as_response(raw: bytes) -> httpx.Response:
    """A raw HTTP/1.1 answer as an httpx.Response (status, headers, body)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:]]
    length = int(dict((k.lower(), v) for k, v in headers).get("content-length", len(body)))
    return httpx.Response(int(lines[0].split()[1]), headers=headers, content=body[:length])
