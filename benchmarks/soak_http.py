"""Soak benchmark of the HTTP service (not a timed test): ``POST /predict`` for 60 s at concurrency 32
against ``papertrack serve --workers 2``; then the same 60 s with 20,000 distinct unknown paths
(``GET /no-such-page-<i>``) mixed in by 4 more connections.

Reports per phase: requests/s, p50/p99, errors, each worker's share of the CPU time spent serving (psutil: the
service's Prometheus files are BentoML's business, and ``/metrics`` sums the workers), each worker's RSS at start
and end, and the size of ``/metrics``.
Goals (issue 13): 0 errors, p99 <= 4x p50, RSS growth <= 10%, no worker < 35% of the work; with the
unknown paths, RSS and ``/metrics`` size flat.

    PAPERTRACK_HOME=/tmp/serving-bench .venv/bin/python benchmarks/soak_http.py --json /tmp/soak.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

import psutil
from bench_http import free_port, read_response, request_bytes, run_phase, start_server, stop_server, wait_ready
from shared_data import unlabeled_abstracts


def workers(server_pid: int) -> list[psutil.Process]:
    """The service's worker processes (children of the BentoML arbiter that serve the API)."""
    found = []
    for child in psutil.Process(server_pid).children(recursive=True):
        try:
            if "_bentoml_impl.worker.service" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            pass
    return sorted(found, key=lambda p: p.pid)


def rss_mb(processes: list[psutil.Process]) -> dict[int, float]:
    return {p.pid: round(p.memory_info().rss / 2**20, 1) for p in processes}


def cpu_seconds(processes: list[psutil.Process]) -> dict[int, float]:
    """CPU seconds (user + system) each worker has spent so far."""
    return {p.pid: sum(p.cpu_times()[:2]) for p in processes}


async def unknown_paths(host: str, port: int, count: int, seconds: float, connections: int = 4) -> dict:
    """``count`` GETs of distinct missing paths spread evenly over ``seconds``."""
    done = {"n": 0, "not_404": 0}
    indexes = iter(range(count))
    interval = seconds * connections / count

    async def client():
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for i in indexes:
                started = time.perf_counter()
                writer.write(f"GET /no-such-page-{i} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
                status, _, closes = await read_response(reader)
                done["n"] += 1
                done["not_404"] += status != 404
                if closes:
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, port)
                await asyncio.sleep(max(0.0, interval - (time.perf_counter() - started)))
        finally:
            writer.close()

    await asyncio.gather(*(client() for _ in range(connections)))
    return done


async def soak(host, port, requests, concurrency, seconds, unknown):
    load = run_phase(host, port, requests, concurrency, 10**9, seconds)
    if not unknown:
        return await load, None
    return await asyncio.gather(load, unknown_paths(host, port, unknown, seconds))


def metrics_size(host: str, port: int) -> int:
    import httpx

    return len(httpx.get(f"http://{host}:{port}/metrics", timeout=60).content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--unknown-paths", type=int, default=20_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    host, port = "127.0.0.1", free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"soak_http_server_{os.getpid()}.log"
    proc = start_server(port, args.workers, log)
    results = {"cpus": os.cpu_count(), "workers": args.workers, "concurrency": args.concurrency, "phases": []}
    try:
        wait_ready(host, port, proc)
        texts = unlabeled_abstracts(2000, max_chars=20_000, strip=False)
        requests = [request_bytes(host, port, "/predict", {"abstract": t, "top_k": 3}) for t in texts]
        asyncio.run(run_phase(host, port, requests, 4, 400, 10))  # warm-up
        for unknown in (0, args.unknown_paths):
            procs = workers(proc.pid)
            before_rss, before_cpu = rss_mb(procs), cpu_seconds(procs)
            before_metrics = metrics_size(host, port)
            load_before = os.getloadavg()
            result, extra = asyncio.run(soak(host, port, requests, args.concurrency, args.seconds, unknown))
            after_cpu = cpu_seconds(procs)
            served = {pid: after_cpu[pid] - before_cpu.get(pid, 0.0) for pid in after_cpu}
            total = sum(served.values()) or 1
            phase = {
                **result,
                "unknown_paths": unknown,
                "unknown_not_404": extra and extra["not_404"],
                "unknown_sent": extra and extra["n"],
                "rss_mb_start": before_rss,
                "rss_mb_end": rss_mb(procs),
                "worker_share": {pid: round(n / total, 3) for pid, n in served.items()},
                "metrics_bytes_start": before_metrics,
                "metrics_bytes_end": metrics_size(host, port),
                "loadavg_before": [round(x, 2) for x in load_before],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            }
            results["phases"].append(phase)
            growth = max((phase["rss_mb_end"][pid] / phase["rss_mb_start"][pid] - 1) for pid in phase["rss_mb_start"])
            print(
                f"{'with ' + format(unknown, ',') + ' unknown paths' if unknown else 'predict only':<28} "
                f"{result['rps']:>7.1f} req/s  p50 {result['p50_ms']:.1f} ms  p99 {result['p99_ms']:.1f} ms "
                f"(p99/p50 {result['p99_ms'] / result['p50_ms']:.1f})  errors {result['failures']}  "
                f"shares {sorted(phase['worker_share'].values())}  RSS {phase['rss_mb_start']} -> "
                f"{phase['rss_mb_end']} MB (max growth {growth:+.1%})  /metrics {phase['metrics_bytes_start']:,} -> "
                f"{phase['metrics_bytes_end']:,} B  load {phase['loadavg_before']}",
                flush=True,
            )
    finally:
        stop_server(proc)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
