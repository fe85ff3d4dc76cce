"""Benchmark of ``papertrack label`` next to raw ``predict`` on the same rows, in the same run.

1. ``papertrack label DUMP -o OUT.jsonl`` as a subprocess (repeat DUMP with ``--copies`` for a bigger
   input; ``--workers N`` passed on, else the command's default): wall time, the labeler's own abstracts/s
   (reading + predicting + writing + fsync, without start-up), the peak RSS of the largest of its processes
   (``os.wait4``), and, sampled every 0.2 s from /proc, the peak RSS of the main process, the worker processes
   it forked, and the peak of their summed PSS (pages shared copy-on-write counted once).
2. In this process, the same rows read beforehand (not timed), then timed:
   ``TrackPredictor.predict`` (the vectorised call the labeler makes) and the pyfunc's
   ``model.predict(DataFrame)``, both in chunks of the labeler's chunk size.

    PAPERTRACK_HOME=/tmp/serving-bench .venv/bin/python benchmarks/bench_label.py
    PAPERTRACK_HOME=/tmp/serving-bench .venv/bin/python benchmarks/bench_label.py --copies 5 --skip-raw
    PAPERTRACK_HOME=/tmp/serving-bench .venv/bin/python benchmarks/bench_label.py --workers 1 --skip-raw
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from shared_data import UNLABELED, papertrack_exe


def run_labeler(dumps: list[Path], out: Path, chunk: int, extra: list[str]) -> dict:
    command = [
        papertrack_exe(),
        "label",
        *map(str, dumps),
        "-o",
        str(out),
        "--no-progress",
        "--chunk-size",
        str(chunk),
        *extra,
    ]
    log_out, log_err = out.with_suffix(".stdout"), out.with_suffix(".stderr")
    started = time.perf_counter()
    with open(log_out, "w") as o, open(log_err, "w") as e:
        proc = subprocess.Popen(command, stdout=o, stderr=e)
    peaks = {"main_rss_kb": 0, "workers_rss_kb": 0, "workers": 0, "pss_sum_kb": 0}
    sampling = threading.Event()
    sampler = threading.Thread(target=_sample_memory, args=(proc.pid, peaks, sampling), daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)  # reap it ourselves: wait4 gives its largest process's peak RSS
    wall = time.perf_counter() - started
    sampling.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = log_out.read_text(), log_err.read_text()
    if proc.returncode != 0:
        raise SystemExit(f"papertrack label failed ({proc.returncode}):\n{stdout}\n{stderr}")
    text = " ".join(stdout.split())
    inputs = int(re.search(r"([\d,]+) input records", text).group(1).replace(",", ""))
    rows = int(re.search(r"= ([\d,]+) labeled rows", text).group(1).replace(",", ""))
    errors = int(re.search(r"\+ ([\d,]+) errors", text).group(1).replace(",", ""))
    seconds = float(re.search(r"([\d.]+) s, [\d,]+ abstracts/s", text).group(1))
    return {
        "command": " ".join(command),
        "inputs": inputs,
        "rows": rows,
        "errors": errors,
        "labeler_seconds": seconds,
        "labeler_rate": round(inputs / seconds, 1),
        "process_wall_seconds": round(wall, 2),
        "process_rate": round(inputs / wall, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "workers_seen": peaks["workers"],
        "sampled_peak_rss_mb": {
            "main": round(peaks["main_rss_kb"] / 1024, 1),
            "each_worker": round(peaks["workers_rss_kb"] / 1024, 1),
            "pss_sum": round(peaks["pss_sum_kb"] / 1024, 1),
        },
    }


def _proc_kb(pid: int, file: str, field: str) -> int:
    """A ``field: N kB`` line of ``/proc/PID/FILE`` (``status``: VmRSS; ``smaps_rollup``: Pss), 0 when gone."""
    try:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _sample_memory(pid: int, peaks: dict, stop: threading.Event) -> None:
    """Peak RSS of the labeler's main process and of each worker it forked, and of their summed PSS (Linux)."""
    while not stop.wait(0.2):
        workers = _children(pid)
        peaks["workers"] = max(peaks["workers"], len(workers))
        peaks["main_rss_kb"] = max(peaks["main_rss_kb"], _proc_kb(pid, "status", "VmRSS"))
        for worker in workers:
            peaks["workers_rss_kb"] = max(peaks["workers_rss_kb"], _proc_kb(worker, "status", "VmRSS"))
        peaks["pss_sum_kb"] = max(peaks["pss_sum_kb"], sum(_proc_kb(p, "smaps_rollup", "Pss") for p in [pid, *workers]))


def raw_predict(dumps: list[Path], model_uri: str, chunk: int) -> dict:
    import pandas as pd

    from papertrack import store as mlstore
    from papertrack.features.ingest import Record, iter_records
    from papertrack.models.loading import load_predictor

    with mlstore.using(mlstore.open()):
        predictor, pyfunc = load_predictor(model_uri)
    records = [r for path in dumps for r in iter_records(path) if isinstance(r, Record)]
    abstracts = [r.abstract for r in records]
    titles = [r.title for r in records]
    predictor.predict(abstracts[:50], titles[:50])  # warm-up
    started = time.perf_counter()
    for i in range(0, len(records), chunk):
        predictor.predict(abstracts[i : i + chunk], titles[i : i + chunk], 3)
    predict_seconds = time.perf_counter() - started
    frames = [
        pd.DataFrame({"abstract": abstracts[i : i + chunk], "title": [t or "" for t in titles[i : i + chunk]]})
        for i in range(0, len(records), chunk)
    ]
    started = time.perf_counter()
    for frame in frames:
        pyfunc.predict(frame, params={"top_k": 3})
    pyfunc_seconds = time.perf_counter() - started
    return {
        "rows": len(records),
        "predict_seconds": round(predict_seconds, 2),
        "predict_rate": round(len(records) / predict_seconds, 1),
        "pyfunc_seconds": round(pyfunc_seconds, 2),
        "pyfunc_rate": round(len(records) / pyfunc_seconds, 1),
        "model": predictor.card.identity(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", type=Path, default=UNLABELED)
    parser.add_argument("--copies", type=int, default=1, help="pass the dump this many times (a bigger input)")
    parser.add_argument("--chunk-size", type=int, default=2000)
    parser.add_argument("--model", default="models:/papertrack@champion")
    parser.add_argument("--workers", type=int, help="papertrack label --workers N (default: the command's own)")
    parser.add_argument("--skip-raw", action="store_true", help="only the labeler")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    dumps = [args.dump] * args.copies
    results = {"loadavg_before": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-label-") as tmp:
        extra = ["--model", args.model] + (["--workers", str(args.workers)] if args.workers else [])
        label = run_labeler(dumps, Path(tmp) / "labeled.jsonl", args.chunk_size, extra)
        results["label"] = label
        print(
            f"papertrack label: {label['inputs']:,} records -> {label['rows']:,} rows + {label['errors']:,} errors; "
            f"{label['labeler_rate']:,.0f} abstracts/s in the labeling loop ({label['labeler_seconds']:.2f} s), "
            f"{label['process_rate']:,.0f}/s for the whole process ({label['process_wall_seconds']:.2f} s incl. "
            f"start-up); peak RSS {label['peak_rss_mb']:,.0f} MB; {label['workers_seen']} worker process(es), "
            f"sampled peak RSS main {label['sampled_peak_rss_mb']['main']:,.0f} MB, each worker "
            f"{label['sampled_peak_rss_mb']['each_worker']:,.0f} MB, "
            f"summed PSS {label['sampled_peak_rss_mb']['pss_sum']:,.0f} MB",
            flush=True,
        )
    if not args.skip_raw:
        raw = raw_predict(dumps, args.model, args.chunk_size)
        results["raw"] = raw
        ratio = raw["predict_rate"] / results["label"]["labeler_rate"]
        results["raw_over_label"] = round(ratio, 3)
        print(
            f"raw TrackPredictor.predict: {raw['predict_rate']:,.0f} abstracts/s ({raw['predict_seconds']:.2f} s); "
            f"pyfunc model.predict: {raw['pyfunc_rate']:,.0f}/s ({raw['pyfunc_seconds']:.2f} s); "
            f"raw predict is {ratio:.2f}x the labeler's rate",
            flush=True,
        )
    results["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
