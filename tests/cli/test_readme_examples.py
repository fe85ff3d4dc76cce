"""The README's and docs' examples run: every ```python block of a page (in one interpreter, in order) and the
README's read-only shell lines on the shared data (`papertrack runs`, `papertrack taxonomies`, `papertrack label` of
a shared file), against the session's trained store. A block preceded by `<!-- not run -->` is skipped."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PAPERTRACK = str(Path(sys.executable).with_name("papertrack"))


def blocks(page: Path, language: str) -> list[str]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(rf"(<!-- not run -->\s*)?```{language}\n(.*?)```", text, re.S):
        if not match.group(1):
            found.append(match.group(2))
    return found


def _env(trained, data_dir) -> dict:
    env = {**os.environ, "PAPERTRACK_HOME": str(trained["home"]), "PAPERTRACK_DATA_DIR": str(data_dir)}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "python")], ids=lambda p: p.name)
def test_the_python_examples_run(page, trained, data_dir, tmp_path):
    code = "\n".join(blocks(page, "python")).replace("../shared/data", str(data_dir))
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(trained, data_dir),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-3000:]}"


READ_ONLY = re.compile(r"^papertrack (runs|taxonomies|label \.\./shared/data/\S+)")
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]{2,}\b")  # e.g. RUN_ID: a line to adapt, not to run


def test_the_readme_shell_lines_on_the_shared_data_run(trained, data_dir, tmp_path):
    lines = [
        line.split("#", 1)[0].strip()
        for block in blocks(ROOT / "README.md", "bash")
        for line in block.splitlines()
        if READ_ONLY.match(line.strip()) and not PLACEHOLDER.search(line.split("#", 1)[0])
    ]
    assert any(line.startswith("papertrack label") for line in lines)  # the README still shows labeling a dump
    for line in lines:
        args = [a.replace("../shared/data", str(data_dir)) for a in shlex.split(line)[1:]]
        done = subprocess.run(
            [PAPERTRACK, *args], env=_env(trained, data_dir), cwd=tmp_path, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{line}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
