"""What a venue costs the default sweep (issue 36: "adding NeurIPS 2025 costs the default sweep <= +20% wall time").

    .venv/bin/python benchmarks/bench_heads_wall.py --rounds 1 [--without "neurips2025_dev_topics.jsonl"]

Per round, back to back (or ``--side-by-side``: both at once; paired: the same moment of a shared machine), the
default ``papertrack train --no-register --plots none`` on a data folder of symlinks to the data folder's labeled
files: once with every file, once without the ``--without`` file(s); the order alternates between rounds. Each train
runs in its own fresh PAPERTRACK_HOME (no store, no champion: nothing to skip). Prints each wall time, the load
average before, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from shared_data import papertrack_exe

from papertrack.training.data import SOURCE_PATTERN


def start_train(data_dir: Path, home: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PAPERTRACK_DATA_DIR": str(data_dir), "PAPERTRACK_HOME": str(home)}
    out = open(log, "w")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(
        [papertrack_exe(), "train", "--no-register", "--plots", "none"], env=env, stdout=out, stderr=out
    )


def wait_for(process: subprocess.Popen, started: float) -> float:
    if process.wait() != 0:
        raise SystemExit(f"train failed ({process.args}); see its log")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("PAPERTRACK_DATA_DIR", "../shared/data")))
    parser.add_argument("--without", nargs="+", default=["neurips2025_dev_topics.jsonl"])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--side-by-side", action="store_true", help="run both trains at once (paired by the moment)")
    args = parser.parse_args()
    files = sorted(args.data.resolve().glob(SOURCE_PATTERN))
    work = Path(tempfile.mkdtemp(prefix="heads-wall-"))
    variants = {"with": files, "without": [f for f in files if f.name not in args.without]}
    for name, chosen in variants.items():
        (work / name).mkdir()
        for f in chosen:
            (work / name / f.name).symlink_to(f)
    for r in range(args.rounds):
        order = ["with", "without"] if r % 2 == 0 else ["without", "with"]
        seconds = {}
        if args.side_by_side:  # both at once: the same share of a busy machine for each
            load, started = os.getloadavg()[0], time.perf_counter()
            running = {n: start_train(work / n, work / f"home-{n}-{r}", work / f"train-{n}-{r}.log") for n in order}
            while running:  # each timed to its own end
                for name, process in list(running.items()):
                    if process.poll() is not None:
                        seconds[name] = wait_for(running.pop(name), started)
                        print(f"round {r} {name}: {seconds[name]:.0f} s side by side (load average {load:.2f} before)")
                time.sleep(1)
        for name in [] if args.side_by_side else order:
            load, started = os.getloadavg()[0], time.perf_counter()
            process = start_train(work / name, work / f"home-{name}-{r}", work / f"train-{name}-{r}.log")
            seconds[name] = wait_for(process, started)
            print(f"round {r} {name}: {seconds[name]:.0f} s (load average {load:.2f} before)", flush=True)
        print(f"round {r}: with / without = {seconds['with'] / seconds['without']:.3f}  (logs in {work})", flush=True)


if __name__ == "__main__":
    main()
