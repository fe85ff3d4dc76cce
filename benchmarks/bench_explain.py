"""Latency of ``POST /explain`` (tracks + the terms behind each + the nearest labeled papers) at concurrency 1,
next to ``POST /predict`` on the same abstracts and server; also the in-process cost of
``papertrack.models.explain.explain`` on the champion (no HTTP), to see where the time goes.

Target: p50 of ``/explain`` <= 20 ms with a TF-IDF champion.

    PAPERTRACK_HOME=/tmp/web-home .venv/bin/papertrack train -c tfidf-word-logreg
    PAPERTRACK_HOME=/tmp/web-home .venv/bin/python benchmarks/bench_explain.py --start
    .venv/bin/python benchmarks/bench_explain.py --url http://127.0.0.1:3000      # a running server

Reuses the load generator of ``bench_http.py`` (raw keep-alive HTTP/1.1, loopback only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

from bench_http import request_bytes, run_phase, server_target, stop_server, wait_ready
from shared_data import unlabeled_abstracts


def in_process(texts: list[str], top_k: int) -> dict:
    """Milliseconds per ``explain`` call on the registered champion, in this process."""
    from papertrack import store
    from papertrack.models.explain import explain, explainer_for
    from papertrack.models.loading import load_predictor

    with store.using(store.open()):
        predictor, _ = load_predictor("models:/papertrack@champion")
    explain(predictor, texts[0], top_k=top_k)  # builds the explainer
    times = []
    for text in texts:
        started = time.perf_counter()
        explain(predictor, text, top_k=top_k)
        times.append(1000 * (time.perf_counter() - started))
    times.sort()
    return {
        "candidate": predictor.card.candidate,
        "method": explainer_for(predictor).method["kind"],
        "calls": len(times),
        "p50_ms": round(times[len(times) // 2], 3),
        "p90_ms": round(times[int(0.9 * len(times))], 3),
        "mean_ms": round(statistics.fmean(times), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running service (loopback only)")
    parser.add_argument("--start", action="store_true", help="start `papertrack serve` on a free port")
    parser.add_argument("--workers", type=int, default=1, help="server workers with --start")
    parser.add_argument("--requests", type=int, default=1000, help="requests per endpoint")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time limit of each phase")
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument("--no-in-process", action="store_true", help="skip the in-process measurement")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    host, port, proc, log = server_target(parser, args, "bench_explain")
    results: dict = {"machine": {"cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in os.getloadavg()]}}
    try:
        wait_ready(host, port, proc)
        texts = unlabeled_abstracts(1000, max_chars=20_000)
        import httpx

        meta = httpx.get(f"http://{host}:{port}/metadata", timeout=10).json()
        results["model"] = {"candidate": meta.get("candidate"), "version": meta["model"]["version"]}
        for path in ("/explain", "/predict"):
            requests = [request_bytes(host, port, path, {"abstract": t, "top_k": args.top_k}) for t in texts]
            asyncio.run(run_phase(host, port, requests, 1, 50, 20))  # warm-up
            result = asyncio.run(run_phase(host, port, requests, 1, args.requests, args.max_seconds))
            results[path] = result
            print(
                f"{path:<9} {meta.get('candidate')}: {result['requests']} req  p50 {result['p50_ms']:.2f} ms  "
                f"p90 {result['p90_ms']:.2f} ms  p99 {result['p99_ms']:.2f} ms  failures {result['failures']}",
                flush=True,
            )
            if result["failures"]:
                raise SystemExit(f"failed requests, first: {result['first_failure']}")
    finally:
        if proc is not None:
            stop_server(proc)
    if not args.no_in_process:
        results["in_process"] = in_process(texts[:300], args.top_k)
        r = results["in_process"]
        print(f"in-process explain() ({r['method']}): p50 {r['p50_ms']:.2f} ms  p90 {r['p90_ms']:.2f} ms", flush=True)
    results["machine"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
