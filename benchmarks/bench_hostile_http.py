"""How a running service answers ``/healthz`` while it is sent expensive requests (hostile input, round three):
bounded in count and time, loopback only.

    .venv/bin/python benchmarks/bench_hostile_http.py --url http://127.0.0.1:3000 explain --requests 320 -c 32
    .venv/bin/python benchmarks/bench_hostile_http.py --url http://127.0.0.1:3000 parse_dump --file D.gz -c 16
    .venv/bin/python benchmarks/bench_hostile_http.py --url http://127.0.0.1:3000 predict --requests 300
    .venv/bin/python benchmarks/bench_hostile_http.py --url http://127.0.0.1:3000 predict --fdfa -c 16 --requests 320

``explain``: ``--requests`` explanations of a 20,000-character abstract (``--top-k``, default every label but
at most what the service allows with ``--terms``; ``--terms`` 50, ``--neighbors`` 50) from ``-c`` threads;
``parse_dump``: ``-c`` uploads of ``--file`` at once; ``predict``: ``/predict`` of a normal abstract, one at a
time (its latency), or with ``--fdfa`` 19,990 × U+FDFA (NFKD expands it 18×) from ``-c`` threads. Meanwhile one
thread asks ``/healthz`` every 25 ms. Prints one JSON object: the statuses,
the answer sizes, and the latencies (p50/p99/max, ms) of the requests and of ``/healthz``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ABSTRACT = (
    "We propose a sparse attention mechanism for transformers that reduces the quadratic cost of self-attention "
    "on long sequences while matching dense attention on language modeling benchmarks, and we analyse when "
    "learned sparsity patterns generalise across tasks, datasets and model sizes."
)
MAX_SECONDS = 300.0  # the whole run stops sending after this long


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 1),
        "p90": round(ordered[min(len(ordered) - 1, int(0.90 * len(ordered)))], 1),
        "p99": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1),
        "max": round(ordered[-1], 1),
    }


class HealthProbe:
    """GET /healthz every ``period`` seconds from a child process (this one's client threads would delay it)
    until stopped; (time.time() at the request, latency in ms) pairs (a failure or timeout counts as 10,000 ms)."""

    def __init__(self, url: str, period: float = 0.025):
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.done, self.results = context.Event(), context.Queue()
        self.process = context.Process(target=_probe, args=(url, period, self.done, self.results), daemon=True)
        self.latencies: list[tuple[float, float]] = []

    def start(self) -> None:
        self.process.start()

    def stop(self) -> None:
        self.done.set()
        self.latencies = self.results.get(timeout=60)
        self.process.join(timeout=30)


def _probe(url: str, period: float, done, results) -> None:
    latencies = []
    with httpx.Client(timeout=10) as client:
        while not done.is_set():
            at, started = time.time(), time.perf_counter()
            try:
                client.get(f"{url}/healthz").raise_for_status()
                latencies.append((at, (time.perf_counter() - started) * 1000))
            except httpx.HTTPError:
                latencies.append((at, 10_000.0))
            done.wait(period)
    results.put(latencies)


def run(url: str, send, requests: int, concurrency: int, load_nice: int = 0) -> dict:
    """``send(client)`` -> (status, bytes) ``requests`` times from ``concurrency`` threads, /healthz probed;
    ``load_nice``: the sending threads' niceness (the probe keeps its own)."""
    probe = HealthProbe(url)
    statuses: dict[int, int] = {}
    sizes, latencies = [], []
    lock = threading.Lock()
    deadline = time.monotonic() + MAX_SECONDS
    local = threading.local()

    def one(_: int) -> None:
        if time.monotonic() > deadline:
            return
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=120)
        started = time.perf_counter()
        try:
            status, size = send(local.client)
        except httpx.HTTPError:
            status, size = 0, 0
        with lock:
            statuses[status] = statuses.get(status, 0) + 1
            sizes.append(size)
            latencies.append((time.perf_counter() - started) * 1000)

    probe.start()
    time.sleep(2.0)  # the probe's process starts
    if load_nice:
        import os

        os.nice(load_nice)  # this process only: the probe is already its own process
    started, load_from = time.monotonic(), time.time()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(requests)))
    seconds, load_to = time.monotonic() - started, time.time()
    probe.stop()
    under_load = [ms for at, ms in probe.latencies if load_from <= at <= load_to]
    return {
        "statuses": statuses,
        "seconds": round(seconds, 1),
        "answer_bytes_max": max(sizes, default=0),
        "requests_ms": percentiles(latencies),
        "healthz_ms": percentiles([ms for _, ms in probe.latencies]),  # also 2 s before the load and after it
        "healthz_under_load_ms": {**percentiles(under_load), "values": [round(ms, 1) for ms in under_load]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the service, on 127.0.0.1")
    parser.add_argument(
        "--load-nice",
        type=int,
        default=0,
        help="run the load's client threads at this niceness (an attacker's clients would not share the "
        "server's cores; here they do) — the /healthz probe keeps its own",
    )
    sub = parser.add_subparsers(dest="kind", required=True)
    explain = sub.add_parser("explain")
    explain.add_argument("--requests", type=int, default=320)
    explain.add_argument("-c", "--concurrency", type=int, default=32)
    explain.add_argument("--top-k", type=int, default=None)
    explain.add_argument("--terms", type=int, default=50)
    explain.add_argument("--neighbors", type=int, default=50)
    dump = sub.add_parser("parse_dump")
    dump.add_argument("--file", type=Path, required=True)
    dump.add_argument("-c", "--concurrency", type=int, default=16)
    predict = sub.add_parser("predict")
    predict.add_argument("--requests", type=int, default=300)
    predict.add_argument("-c", "--concurrency", type=int, default=1)
    predict.add_argument("--fdfa", action="store_true", help="19,990 x U+FDFA instead of a normal abstract")
    args = parser.parse_args(argv)
    if urlsplit(args.url).hostname not in ("127.0.0.1", "localhost", "::1"):
        print("error: --url must be a loopback address (127.0.0.1)", file=sys.stderr)
        return 2
    url = args.url.rstrip("/")
    if args.kind == "explain":
        n_labels = httpx.get(f"{url}/metadata", timeout=30).json()["n_labels"]
        top_k = args.top_k or n_labels
        long = (ABSTRACT + " ") * (20_000 // (len(ABSTRACT) + 1))
        body = {"abstract": long, "top_k": top_k, "terms": args.terms, "neighbors": args.neighbors}

        encoded = json.dumps(body).encode("utf-8")  # once: the client's own CPU shares the server's cores

        def send(client):
            response = client.post(f"{url}/explain", content=encoded, headers={"Content-Type": "application/json"})
            return response.status_code, len(response.content)

        result = run(url, send, args.requests, args.concurrency, args.load_nice)
        result["request"] = {"abstract_chars": len(long), **{k: v for k, v in body.items() if k != "abstract"}}
    elif args.kind == "parse_dump":
        data = args.file.read_bytes()

        def send(client):
            response = client.post(f"{url}/parse_dump", params={"filename": args.file.name}, content=data)
            return response.status_code, len(response.content)

        result = run(url, send, args.concurrency, args.concurrency, args.load_nice)
        result["request"] = {"file": str(args.file), "bytes": len(data)}
    else:
        encoded = json.dumps({"abstract": "\ufdfa" * 19_990 if args.fdfa else ABSTRACT}).encode("utf-8")

        def send(client):
            response = client.post(f"{url}/predict", content=encoded, headers={"Content-Type": "application/json"})
            return response.status_code, len(response.content)

        result = run(url, send, args.requests, args.concurrency, args.load_nice)
        result["request"] = {"abstract": "19,990 x U+FDFA" if args.fdfa else "normal", "concurrency": args.concurrency}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
