"""The environment is installed from the lock files (requirements/*.lock, pip-tools' hashed requirements): what CI
passed with, not whatever a dependency released since. pyproject.toml keeps ranges for library users."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\;]+)", re.MULTILINE)


def pins(lock: str) -> dict[str, str]:
    text = (ROOT / "requirements" / lock).read_text(encoding="utf-8")
    return {canonicalize_name(name): version for name, version in PIN.findall(text)}


def test_every_locked_distribution_is_installed_at_its_locked_version():
    moved = []
    for name, locked in sorted(pins("all.lock").items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            moved.append(f"{name}: locked {locked}, not installed")
            continue
        if Version(installed) != Version(locked):
            moved.append(f"{name}: locked {locked}, installed {installed}")
    assert not moved, "the environment differs from requirements/all.lock (run scripts/setup.sh):\n" + "\n".join(moved)


def test_every_lock_line_carries_a_hash():
    for lock in ("all.lock", "core.lock", "uv.lock"):
        text = (ROOT / "requirements" / lock).read_text(encoding="utf-8")
        blocks = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", text)
        unhashed = [b.split()[0] for b in blocks if PIN.match(b) and "--hash=sha256:" not in b]
        assert not unhashed, f"{lock}: pins without a hash: {unhashed}"


def test_the_core_lock_agrees_with_the_full_lock():
    core, full = pins("core.lock"), pins("all.lock")
    assert {"mlflow", "bentoml", "uvicorn", "scikit-learn"} <= set(core)
    assert "torch" not in core and "pytest" not in core  # the main job installs papertrack alone
    assert {name: v for name, v in core.items() if full.get(name) != v} == {}


def test_pyproject_keeps_ranges_for_library_users():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    exact = [d for d in project["dependencies"] if "==" in d]
    assert exact == []
    assert any(d.startswith("bentoml>=1.4,<1.5") for d in project["dependencies"])
