"""Benchmark of Spark batch labeling against the in-process labeler, on the whole unlabeled corpus.

Every configuration is one ``papertrack label`` process (the command is printed), timed from its start to
its exit, so Spark's figures include the JVM start and the model download; peak memory is the largest sum
of RSS over the process tree (driver Python + Spark JVM + Python workers), sampled every 0.2 s, and so is
the tree's CPU time (user + system: the work done, which the load of a shared machine does not inflate the
way it inflates wall time; processes that live less than 0.2 s are missed). The job
itself (``summary.json`` timings) is reported apart from Spark's start. The load average is recorded next
to every figure: the machine is shared.

    PAPERTRACK_HOME=/tmp/spark-home .venv/bin/papertrack train -c tfidf-word-logreg   # the TF-IDF champion
    PAPERTRACK_HOME=/tmp/spark-home .venv/bin/python benchmarks/bench_spark.py
    PAPERTRACK_HOME=/tmp/spark-home .venv/bin/python benchmarks/bench_spark.py --tune   # batch x partitions
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

import psutil
from shared_data import UNLABELED, papertrack_exe

BATCH_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"


def tree_sample(proc: psutil.Process, cpu: dict[int, float], own: dict[int, tuple[str, float]]) -> int:
    """The tree's RSS now; ``cpu`` keeps each process's latest CPU seconds (user + system, with its reaped
    children) so the sum covers processes that have exited since; ``own`` each process's kind (driver, JVM,
    Python worker) and its own CPU seconds, for the split by kind."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            with p.oneshot():
                total += p.memory_info().rss
                t = p.cpu_times()
                cpu[p.pid] = t.user + t.system + t.children_user + t.children_system
                kind = "driver" if p.pid == proc.pid else "jvm" if "java" in p.name() else "python workers"
                own[p.pid] = (kind, t.user + t.system)
        except psutil.Error:
            pass
    return total


def run(label_args: list[str], out: Path) -> dict:
    exe = papertrack_exe()
    command = [exe, "label", str(UNLABELED_DUMP), "-o", str(out), "--no-progress", *label_args]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    cpu: dict[int, float] = {}
    own: dict[int, tuple[str, float]] = {}
    done = threading.Event()

    def sample():
        nonlocal peak
        watched = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                peak = max(peak, tree_sample(watched, cpu, own))
            except psutil.Error:
                return
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}):\n{stdout}\n{stderr[-3000:]}")
    text = " ".join(stdout.split())
    inputs = int(re.search(r"([\d,]+) input records", text).group(1).replace(",", ""))
    result = {
        "command": " ".join(command).replace(exe, "papertrack"),
        "inputs": inputs,
        "wall_seconds": round(wall, 2),
        "abstracts_per_s": round(inputs / wall, 1),
        "peak_rss_mb": round(peak / 2**20),
        "cpu_seconds": round(sum(cpu.values()), 1),
        "load_before": round(load, 2),
        "cpu_by_kind": {
            kind: round(sum(c for k, c in own.values() if k == kind), 1)
            for kind in sorted({k for k, _ in own.values()})
        },
        "load_after": round(os.getloadavg()[0], 2),
    }
    summary = out / "summary.json"
    if summary.exists():
        data = json.loads(summary.read_text())
        result.update(
            spark_start_s=data["timings"]["spark_start"],
            job_s=data["timings"]["job"],
            job_abstracts_per_s=round(inputs / data["timings"]["job"], 1),
            steps={k: v for k, v in data["timings"].items() if k not in ("spark_start", "job")},
            partitions=data["partitions"],
            arrow_batch=data["arrow_batch"],
        )
    return result


def spark_args(master: str, partitions: int | None = None, batch: int | None = None) -> list[str]:
    args = ["--engine", "spark", "--master", master]
    if partitions:
        args += ["--partitions", str(partitions)]
    if batch:
        args += ["--spark-conf", f"{BATCH_KEY}={batch}"]
    return args


def show(name: str, r: dict) -> None:
    steps = ", ".join(f"{k} {v:.1f}" for k, v in r.get("steps", {}).items())
    extra = (
        (
            f"; Spark start {r['spark_start_s']:.1f} s, job {r['job_s']:.1f} s = {r['job_abstracts_per_s']:,.0f}/s "
            f"({steps}; {r['partitions']} partitions, batch {r['arrow_batch']})"
        )
        if "job_s" in r
        else ""
    )
    kinds = ", ".join(f"{k} {v:.0f}" for k, v in r["cpu_by_kind"].items())
    print(
        f"{name:>34}: {r['inputs']:,} in {r['wall_seconds']:.1f} s = {r['abstracts_per_s']:,.0f} abstracts/s, "
        f"peak {r['peak_rss_mb']:,} MB, CPU {r['cpu_seconds']:.0f} s ({kinds}), "
        f"load {r['load_before']:.1f}->{r['load_after']:.1f}{extra}",
        flush=True,
    )


UNLABELED_DUMP = UNLABELED


def main() -> None:
    global UNLABELED_DUMP
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", type=Path, default=UNLABELED)
    parser.add_argument("--runs", type=int, default=1, help="repeat each configuration (figures of every run)")
    parser.add_argument("--tune", action="store_true", help="local[2] over Arrow batch sizes and partition counts")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    UNLABELED_DUMP = args.dump
    results: dict[str, list[dict]] = {}
    if args.tune:
        configs = [
            (f"local[2] p={p} batch={b}", spark_args("local[2]", p, b))
            for p, b in ((2, 500), (2, 2000), (2, 10000), (8, 2000))
        ]
    else:
        configs = [
            ("in-process", []),
            ("spark local[1]", spark_args("local[1]")),
            ("spark local[2]", spark_args("local[2]")),
        ]
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        for _ in range(args.runs):
            for i, (name, label_args) in enumerate(configs):
                out = Path(tmp) / f"out{i}.jsonl"
                r = run(label_args, out)
                results.setdefault(name, []).append(r)
                show(name, r)
    if not args.tune:
        best = {name: max(r["abstracts_per_s"] for r in runs) for name, runs in results.items()}
        job = {
            name: max(r["job_abstracts_per_s"] for r in runs) for name, runs in results.items() if name != "in-process"
        }
        print(
            f"local[2] / local[1] = {best['spark local[2]'] / best['spark local[1]']:.2f}x; "
            f"in-process / local[2] = {best['in-process'] / best['spark local[2]']:.2f}x (best runs, wall time); "
            f"the job alone (after Spark's start): local[2] / local[1] = "
            f"{job['spark local[2]'] / job['spark local[1]']:.2f}x"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
