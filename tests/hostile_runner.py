"""Run papertrack CLI commands one after the other in this one process and measure each: exit code, output,
uncaught exception, seconds and peak memory. ``tests/cli/test_hostile_corpus_label_suggest_train.py`` starts it as
a child process, so the imports and the model load are paid once, not per case.

    python -m tests.hostile_runner JOBS.json RESULTS.jsonl

JOBS.json: a list of ``{"name": ..., "args": ["label", ...]}``. RESULTS.jsonl gets one line per job as it
finishes: ``{"name", "exit_code", "output", "exception", "seconds", "peak_mib", "before_mib"}``.

The peak is this process's VmHWM (``/proc/self/status``), reset to the current resident size before each job
by writing 5 to ``/proc/self/clear_refs`` (Linux ≥ 4.0): the peak of that job alone, on top of what the process
already held (``before_mib``). ``ru_maxrss`` cannot be reset and would carry every earlier job's peak.
"""

from __future__ import annotations

import json
import sys
import time
import traceback


def status_mib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> None:
    """Hand freed memory back first (else a job reusing what an earlier one freed would not show), then reset."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the peak may then be understated
        pass
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


def main(jobs_path: str, results_path: str) -> int:
    from typer.testing import CliRunner

    from papertrack.cli import app

    with open(jobs_path, encoding="utf-8") as f:
        jobs = json.load(f)
    with open(results_path, "a", encoding="utf-8") as results:
        for job in jobs:
            reset_peak()
            before = status_mib("VmRSS")
            started = time.perf_counter()
            result = CliRunner().invoke(app, job["args"])
            seconds = time.perf_counter() - started
            exception = None
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                exception = "".join(traceback.format_exception(*result.exc_info))[-4000:]
            row = {
                "name": job["name"],
                "exit_code": result.exit_code,
                "output": result.output[-20_000:],
                "exception": exception,
                "seconds": round(seconds, 2),
                "peak_mib": status_mib("VmHWM"),
                "before_mib": before,
            }
            results.write(json.dumps(row) + "\n")
            results.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
