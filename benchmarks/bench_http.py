"""HTTP benchmark of ``POST /predict``: latency at concurrency 1, throughput at concurrency 8 and 32.

A small closed-loop load generator (asyncio, raw HTTP/1.1 keep-alive connections, requests pre-encoded,
so the generator itself costs little CPU on the same machine). Every phase is bounded by a request count
and a time limit; loopback only. Every response must be a 200 with a JSON body, or the run fails.

    # against a server this script starts (papertrack serve on a free port; stopped by PID at the end)
    PAPERTRACK_HOME=/tmp/serving-bench .venv/bin/python benchmarks/bench_http.py --start --workers 2
    # the floor: BentoML alone, papertrack's server settings, a constant answer (benchmarks/bare_bentoml.py)
    .venv/bin/python benchmarks/bench_http.py --bare
    # against a running server
    .venv/bin/python benchmarks/bench_http.py --url http://127.0.0.1:3000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from shared_data import papertrack_exe, unlabeled_abstracts


def request_bytes(host: str, port: int, path: str, body: dict) -> bytes:
    data = json.dumps(body).encode("utf-8")
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n"
    ).encode("ascii")
    return head + data


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """(status, body, whether the server closes the connection after this response)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = None
    chunked = closes = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value.strip())
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
        elif name == b"connection" and b"close" in value.lower():
            closes = True
    if length is not None:
        return status, await reader.readexactly(length), closes
    if chunked:
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return status, body, closes
            body += chunk[:-2]
    raise RuntimeError("response without Content-Length or chunked encoding")


async def run_phase(
    host: str, port: int, requests: list[bytes], concurrency: int, total: int, max_seconds: float, first: int = 0
) -> dict:
    """``concurrency`` connections, each sending its next request when the previous answer arrived; the
    requests are taken in turn from ``requests[first:]`` (wrapping around)."""
    latencies: list[float] = []
    failures: list[str] = []
    counter = iter(range(total))
    deadline = time.perf_counter() + max_seconds

    async def client() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for i in counter:
                if time.perf_counter() > deadline:
                    break
                started = time.perf_counter()
                writer.write(requests[(first + i) % len(requests)])
                status, body, closes = await read_response(reader)
                latencies.append(time.perf_counter() - started)
                if status != 200 or not body.startswith(b"{"):
                    failures.append(f"{status}: {body[:200]!r}")
                if closes:  # the service spreads keep-alive clients over its workers: reconnect
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, port)
        finally:
            writer.close()

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    wall = time.perf_counter() - wall0
    latencies.sort()
    ms = [x * 1000 for x in latencies]
    return {
        "concurrency": concurrency,
        "requests": len(ms),
        "failures": len(failures),
        "first_failure": failures[0] if failures else None,
        "seconds": round(wall, 3),
        "rps": round(len(ms) / wall, 1),
        "p50_ms": round(_pct(ms, 50), 3),
        "p90_ms": round(_pct(ms, 90), 3),
        "p99_ms": round(_pct(ms, 99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "max_ms": round(ms[-1], 3),
        "generator_cpu_share": round((time.process_time() - cpu0) / wall, 3),
    }


def _pct(sorted_values: list[float], pct: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(pct / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]


def server_cpu_seconds(proc: subprocess.Popen | None) -> float:
    """CPU seconds used so far by the server and every process under it (0 when not started here)."""
    if proc is None:
        return 0.0
    import psutil

    total = 0.0
    root = psutil.Process(proc.pid)
    for p in [root, *root.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, workers: int, log: Path, bare: bool = False) -> subprocess.Popen:
    command = [papertrack_exe(), "serve", "--port", str(port), "--workers", str(workers)]
    if bare:  # BentoML alone (benchmarks/bare_bentoml.py: two workers, papertrack's server settings)
        command = [sys.executable, "-m", "bentoml", "serve", "bare_bentoml:Bare", "--host", "127.0.0.1"]
        command += ["--port", str(port)]
    env = dict(os.environ, BENTOML_DO_NOT_TRACK="true")
    with open(log, "wb") as out:
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=Path(__file__).parent, env=env
        )


def wait_ready(host: str, port: int, proc: subprocess.Popen | None, timeout: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://{host}:{port}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError("server not ready in time")


def stop_server(proc: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (it was started in its own session), SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def server_target(parser: argparse.ArgumentParser, args, name: str):
    """(host, port, server process or None, its log) from ``--url`` (loopback only) or ``--start``
    (``papertrack serve`` on a free port, with ``--workers``)."""
    bare = getattr(args, "bare", False)
    if sum(map(bool, (args.url, args.start, bare))) != 1:
        parser.error("give exactly one of --url, --start or --bare")
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"{name}_server_{os.getpid()}.log"
    if args.start or bare:
        port = free_port()
        return "127.0.0.1", port, start_server(port, args.workers, log, bare), log
    parts = urlsplit(args.url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        parser.error("loopback only: the URL must be 127.0.0.1/localhost")
    return parts.hostname, parts.port or 80, None, log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running service (loopback only)")
    parser.add_argument("--start", action="store_true", help="start `papertrack serve` on a free port")
    parser.add_argument(
        "--bare", action="store_true", help="start BentoML alone (bare_bentoml.py, constant answer): the floor"
    )
    parser.add_argument("--workers", type=int, default=2, help="server workers with --start")
    parser.add_argument("--latency-requests", type=int, default=3000)
    parser.add_argument("--throughput-requests", type=int, default=15000)
    parser.add_argument("--max-seconds", type=float, default=30.0, help="time limit of each phase")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    host, port, proc, log = server_target(parser, args, "bench_http")
    try:
        wait_ready(host, port, proc)
        texts = unlabeled_abstracts(2000, max_chars=20_000, strip=False)  # as the service accepts them
        requests = [request_bytes(host, port, "/predict", {"abstract": t, "top_k": args.top_k}) for t in texts]
        load = os.getloadavg()
        results = {
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "loadavg_before": [round(x, 2) for x in load],
            },
            "server": {
                "workers": args.workers if args.start else 2 if args.bare else None,
                "bare": args.bare,
                "url": f"http://{host}:{port}",
            },
            "phases": [],
        }
        # every phase continues where the previous one stopped: no abstract is sent twice until all 2,000 were
        # (an embedding model keeps vectors it has computed in memory: a repeat would measure that memory)
        sent = asyncio.run(run_phase(host, port, requests, 4, 400, 10))["requests"]  # warm-up (every worker)
        phases = [(1, args.latency_requests)] + [(c, args.throughput_requests) for c in args.concurrency]
        for concurrency, total in phases:
            cpu_before = server_cpu_seconds(proc)
            result = asyncio.run(run_phase(host, port, requests, concurrency, total, args.max_seconds, sent))
            sent += result["requests"]
            if proc is not None:  # the server's own CPU per request: much less sensitive to a busy machine
                result["server_cpu_ms_per_request"] = round(
                    1000 * (server_cpu_seconds(proc) - cpu_before) / max(1, result["requests"]), 3
                )
            results["phases"].append(result)
            print(
                f"c={concurrency:<3} {result['requests']:>6} req in {result['seconds']:>6.2f} s  "
                f"{result['rps']:>8.1f} req/s  p50 {result['p50_ms']:.2f} ms  p90 {result['p90_ms']:.2f} ms  "
                f"p99 {result['p99_ms']:.2f} ms  max {result['max_ms']:.1f} ms  failures {result['failures']}  "
                f"generator CPU {result['generator_cpu_share']:.0%}  "
                f"server CPU/request {result.get('server_cpu_ms_per_request', float('nan')):.2f} ms",
                flush=True,
            )
            if result["failures"]:
                raise SystemExit(f"failed requests, first: {result['first_failure']}")
        results["machine"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    finally:
        if proc is not None:
            stop_server(proc)


if __name__ == "__main__":
    main()
