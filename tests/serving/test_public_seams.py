"""Product code (papertrack/, features/, models/, training/, serving/) uses the public API of its libraries only:
no private module of BentoML, uvicorn's protocol classes and tables, prometheus_client's registry internals or a
scikit-learn private attribute, and no check of a library's source text. (Tests may reach into BentoML to point
it at a temporary home: tests/conftest.py.)"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("papertrack/", "features/", "models/", "training/", "serving/")
PRIVATE = re.compile(
    r"bentoml\._internal|_bentoml_impl|_bentoml_sdk|uvicorn\.protocols|uvicorn\.config|HTTP_PROTOCOLS"
    r"|_collector_to_names|inspect\.getsource|\._tfidf\b|\._idf_diag\b"
)


def offenders(files: list[str]) -> list[str]:
    return [
        f"{name}:{number}: {line.strip()}"
        for name in files
        if name.startswith(PRODUCT) and name.endswith(".py") and (ROOT / name).is_file()
        for number, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line)
    ]


def test_no_product_module_touches_a_private_seam():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert offenders(listed) == []


def test_the_scan_sees_a_private_import(tmp_path, monkeypatch):
    (tmp_path / "serving").mkdir()
    (tmp_path / "serving" / "x.py").write_text("from bentoml._internal.configuration import containers\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert offenders(["serving/x.py"]) == ["serving/x.py:1: from bentoml._internal.configuration import containers"]
