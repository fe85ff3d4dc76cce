"""Start-up of the commands a user waits for, each timed as a whole process: ``label`` of the sample dump,
``runs``, ``taxonomies``, and ``serve`` until ``/readyz`` answers 200 (then stopped by its process group).

Each command runs ``--runs`` times after one warm-up (the median is quoted; min and max show the noise), with its
wall time and the CPU time of it and its children (``os.wait4``). With ``--baseline CHECKOUT`` every run of a
command is paired with the same command of another checkout (its ``papertrack`` package first on ``PYTHONPATH``,
same environment and store), run alternately, and the ratio this/baseline is given pair by pair: a comparison that
holds when a shared machine's load drifts. ``--floor`` also times the imports no read command can skip: the
scikit-learn modules unpickling the default model needs (scipy and pandas come with them), the part of a start-up
papertrack cannot cut (MLflow no longer is: see below).

A read command asks MLflow only when the store changed since the last one did (``<home>/registry_cache.json``,
papertrack/registry_cache.py): the warm-up run fills that cache, so the counted runs are the usual case. ``--cold``
removes the cache before every run: the first command after a ``train``.

    PAPERTRACK_HOME=<a store with a champion> .venv/bin/python benchmarks/bench_startup.py
    PAPERTRACK_HOME=... .venv/bin/python benchmarks/bench_startup.py --baseline /tmp/old-checkout --runs 5
    PAPERTRACK_HOME=... .venv/bin/python benchmarks/bench_startup.py --only serve --runs 3
    PAPERTRACK_HOME=<a copy of the store> .venv/bin/python benchmarks/bench_startup.py --only label --cold
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from shared_data import DATA, papertrack_exe

DUMP = DATA / "samples" / "unlabeled_dump.txt"
FLOOR = "import sklearn.feature_extraction.text, sklearn.linear_model, sklearn.naive_bayes, sklearn.svm"
CACHE_FILE = "registry_cache.json"  # papertrack.registry_cache.CACHE_FILE (not imported: a baseline may lack it)


def _env(checkout: str | None) -> dict[str, str]:
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "BENTOML_DO_NOT_TRACK": "true"}
    if checkout:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [checkout, env.get("PYTHONPATH")]))
    return env


def _timed(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Wall and CPU (user + system, the process and its children) seconds of one run; exits if it fails."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_ready(env: dict[str, str], cwd: str, timeout: float = 300) -> tuple[float, float]:
    """Seconds from starting ``papertrack serve`` until /readyz answers 200; the server is then stopped (its process
    group, by its PID). CPU is not measured for serve (its workers outlive the timing): NaN."""
    port = _free_port()
    command = [papertrack_exe(), "serve", "--port", str(port)]
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"papertrack serve exited with {proc.returncode} before it was ready")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
                    if response.status == 200:
                        return time.perf_counter() - started, float("nan")
            except OSError:
                pass
            if time.perf_counter() - started > timeout:
                raise SystemExit(f"papertrack serve not ready after {timeout} s")
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def commands(out: Path) -> dict[str, list[str] | None]:
    exe = papertrack_exe()
    return {
        "label": [exe, "label", str(DUMP), "-o", str(out / "labeled.jsonl"), "--no-progress"],
        "runs": [exe, "runs"],
        "taxonomies": [exe, "taxonomies"],
        "serve": None,  # until /readyz answers
        "floor": [sys.executable, "-c", FLOOR],
    }


def run_once(
    name: str, command: list[str] | None, env: dict[str, str], cwd: str, out: Path, cold: bool = False
) -> tuple[float, float]:
    (out / "labeled.jsonl").unlink(missing_ok=True)  # label refuses to write over an older output
    (out / "labeled.drift.json").unlink(missing_ok=True)
    if cold:  # as after a train: the registry cache no longer matches the database
        (Path(env["PAPERTRACK_HOME"]) / CACHE_FILE).unlink(missing_ok=True)
    return _serve_ready(env, cwd) if command is None else _timed(command, env, cwd)


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):6.2f}  (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="counted runs of each command (after one warm-up)")
    parser.add_argument("--only", nargs="+", choices=["label", "runs", "taxonomies", "serve"], help="these only")
    parser.add_argument("--baseline", help="another checkout: each run paired with its papertrack (PYTHONPATH)")
    parser.add_argument("--floor", action="store_true", help=f"also time `python -c '{FLOOR}'`")
    parser.add_argument("--cold", action="store_true", help=f"remove <PAPERTRACK_HOME>/{CACHE_FILE} before each run")
    args = parser.parse_args()
    if not os.environ.get("PAPERTRACK_HOME"):
        sys.exit("set PAPERTRACK_HOME to a store with a registered champion (e.g. the quickstart's .papertrack)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        cwd = tmp  # not a checkout: the PYTHONPATH given (or the installed package) is the papertrack imported
        table = commands(out)
        names = list(args.only or ["label", "runs", "taxonomies", "serve"]) + (["floor"] if args.floor else [])
        sides = {"this": _env(None), **({"baseline": _env(args.baseline)} if args.baseline else {})}
        print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores; {args.runs} runs each")
        for name in names:
            timings: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for i in range(args.runs + 1):  # the first round is the warm-up
                for side, env in sides.items():
                    result = run_once(name, table[name], env, cwd, out, args.cold)
                    if i:
                        timings[side].append(result)
            for side, runs in timings.items():
                walls, cpus = [w for w, _ in runs], [c for _, c in runs]
                cpu = "" if name == "serve" else f"; CPU {_spread(cpus)}"
                print(f"{name:<11} {side:<8} wall {_spread(walls)}{cpu}")
            if "baseline" in timings:
                ratios = [a[0] / b[0] for a, b in zip(timings["this"], timings["baseline"])]
                print(f"{name:<11} this/baseline wall, pair by pair: {_spread(ratios)}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
