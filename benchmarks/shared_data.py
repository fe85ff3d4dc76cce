"""What the benchmark scripts share: where the shared data folder is, abstracts of the unlabeled corpus, and
the ``papertrack`` command they run.

``PAPERTRACK_DATA_DIR`` when set, else ``shared/data`` beside the repository (the benchmarks are run
from the repository root as ``.venv/bin/python benchmarks/bench_*.py``, which puts this folder on
``sys.path``).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from pathlib import Path

DATA = Path(os.environ.get("PAPERTRACK_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))
UNLABELED = DATA / "ml_abstracts_unlabeled.jsonl.gz"


def papertrack_exe() -> str:
    """The ``papertrack`` command of the benchmark's own environment (beside its Python), else on PATH."""
    beside = Path(sys.executable).with_name("papertrack")
    if beside.exists():
        return str(beside)
    found = shutil.which("papertrack")
    if not found:
        sys.exit("papertrack is not installed in this environment (run scripts/setup.sh)")
    return found


def unlabeled_abstracts(n: int, skip: int = 0, max_chars: int | None = None, strip: bool = True) -> list[str]:
    """The first ``n`` non-empty abstracts of the unlabeled corpus after ``skip`` lines (at most
    ``max_chars`` long when given), stripped of surrounding whitespace unless ``strip`` is False."""
    out: list[str] = []
    with gzip.open(UNLABELED, "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i < skip:
                continue
            abstract = json.loads(line).get("abstract") or ""
            if abstract.strip() and (max_chars is None or len(abstract) <= max_chars):
                out.append(abstract.strip() if strip else abstract)
            if len(out) >= n:
                break
    return out
