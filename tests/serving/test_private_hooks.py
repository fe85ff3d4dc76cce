"""The private seams of BentoML, uvicorn and prometheus_client that papertrack uses are all in
serving/http/private_hooks.py, and they are where they were in the versions it names: an upgrade that moves one
fails here, naming it, instead of silently (a deadline that no longer applies, metrics labels that grow again)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from papertrack.serving.http import private_hooks

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = "serving/http/private_hooks.py"
PRIVATE = r"_internal|HTTP_PROTOCOLS|\._tfidf|_collector_to_names"


def test_the_installed_libraries_have_every_hook_of_the_checked_versions():
    found = private_hooks.problems()
    assert found == [], "the private hooks of serving/http/private_hooks.py moved:\n" + "\n".join(found)


def test_a_version_other_than_the_checked_one_is_reported(monkeypatch):
    monkeypatch.setitem(private_hooks.CHECKED_VERSIONS, "uvicorn", "0.1.")
    assert any(p.startswith("uvicorn ") and "checked against 0.1.x" in p for p in private_hooks.problems())


def test_a_hook_that_is_gone_is_reported_by_name(monkeypatch):
    monkeypatch.setattr(private_hooks, "BENTOML_METRICS_MIDDLEWARE", "NoSuchMiddleware")
    assert any("instruments.NoSuchMiddleware is gone" in p for p in private_hooks.problems())
    with pytest.raises(private_hooks.PrivateHookMissing, match="NoSuchMiddleware is gone.*checked against bentoml 1.4"):
        private_hooks.bentoml_metrics_middleware()


def test_the_deadline_reads_traffic_timeout_from_bentomls_merged_configuration():
    """An override in BENTOML_CONFIG_OPTIONS reaches the read deadline through the adapter (a fresh interpreter:
    BentoML reads its configuration once)."""
    import os
    import sys

    code = "from papertrack.serving.http import read_deadline; print(read_deadline.configured_seconds())"
    env = {**os.environ, "BENTOML_CONFIG_OPTIONS": "services.papertrack.traffic.timeout=7"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout.split()[-1]) == 7.0


def test_no_module_outside_the_adapter_touches_a_private_seam():
    listed = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    offenders = [
        f"{name}:{number}: {line.strip()}"
        for name in listed
        if name not in (ADAPTER, "tests/serving/test_private_hooks.py") and (ROOT / name).is_file()
        for number, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1)
        if re.search(PRIVATE, line)
    ]
    assert offenders == [], "private seams outside serving/http/private_hooks.py:\n" + "\n".join(offenders)
