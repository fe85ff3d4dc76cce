"""The peak memory of reading an input: ``iter_records`` run in a fresh Python, which reports its own peak."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# the peak is VmHWM of the child's own address space: ru_maxrss would carry the forked test process's
# (a GB of pytest after the sweeps) across exec
PEAK = textwrap.dedent("""
    import sys
    from papertrack.features.ingest import iter_records
    kinds = [getattr(item, "kind", "ok") for item in iter_records(sys.argv[1])]
    print(" ".join(kinds))
    hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(int(hwm.split()[1]) // 1024)
""")


def read_in_child(path: Path) -> tuple[list[str], int]:
    """The kinds of the items read from ``path`` in a fresh Python, and its peak memory (MiB)."""
    done = subprocess.run([sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    kinds, peak = done.stdout.splitlines()[-2:]
    return kinds.split(), int(peak)
