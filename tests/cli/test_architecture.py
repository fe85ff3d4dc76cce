"""The dependency arrows of the package: features → models → {training, serving}, with ``papertrack/``
(settings, errors, the MLflow store and registry, the CLI) as the thin shared layer. Inside serving, the two
runtimes stand apart: batch work (``serving/batch/``) never imports the HTTP service (``serving/http/``) and vice
versa; what both use lies at ``serving/``'s root and imports neither.

Checked two ways: statically (every import statement of every module, including imports inside
functions) and at run time (importing the service and the labeler in a fresh interpreter loads neither
the training side nor matplotlib)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("features", "models", "training", "serving")
# what each layer may import from the project, besides itself
ALLOWED = {
    "features": {"papertrack.settings", "papertrack.errors", "papertrack"},
    "models": {"features", "papertrack.settings", "papertrack.errors", "papertrack"},
    "training": {
        "features",
        "models",
        "papertrack.settings",
        "papertrack.errors",
        "papertrack.store",
        "papertrack.registry",
        "papertrack.model_lookup",
        "papertrack",
    },
    "serving": {
        "features",
        "models",
        "papertrack.settings",
        "papertrack.errors",
        "papertrack.store",
        "papertrack.registry",
        "papertrack.model_lookup",
        "papertrack",
    },
    "shared": {
        "papertrack.settings",
        "papertrack.errors",
        "papertrack.store",
        "papertrack.registry",
        "papertrack.model_lookup",
        "papertrack",
    },
}
SHARED_MODULES = ("settings", "errors", "store", "registry", "model_lookup", "cli")


def _unit(name: str) -> str:
    """A layer name ("models"), a shared module ("papertrack.store") or "papertrack" (the package itself)."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[1] in LAYERS:
        return parts[1]
    if len(parts) >= 2 and parts[1] in SHARED_MODULES:
        return f"papertrack.{parts[1]}"
    return "papertrack"


def _project_imports(path: Path) -> list[tuple[int, str]]:
    """(line, unit) of every project import, inside functions too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "papertrack":  # from papertrack import settings, store, ...
                names = [f"papertrack.{alias.name}" for alias in node.names]
            else:
                names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, _unit(name)) for name in names if name.split(".")[0] == "papertrack"]
    return found


def _violations(files, layer: str) -> list[str]:
    out = []
    for path in files:
        for line, unit in _project_imports(path):
            if unit != layer and unit not in ALLOWED[layer]:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {unit} ({layer} -> {unit})")
    return out


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_point_one_way(layer):
    violations = _violations(sorted((ROOT / layer).rglob("*.py")), layer)
    assert not violations, "imports against the arrows:\n" + "\n".join(violations)


SERVING_ROOMS = ("http", "batch")


def _serving_room(module: str) -> str | None:
    """ "http" or "batch" for a module of that serving sub-package, "root" for serving's shared modules, else None."""
    parts = module.split(".")
    if parts[:2] != ["papertrack", "serving"]:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in SERVING_ROOMS else "root"


def _serving_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of a serving module, inside functions too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, m) for m in modules if _serving_room(m) is not None]
    return found


# what each part of serving may import from serving (besides itself)
SERVING_ALLOWED = {"http": {"root"}, "batch": {"root"}, "root": {"root"}}


@pytest.mark.parametrize("room", ["http", "batch", "root"])
def test_serving_runtimes_never_import_each_other(room):
    base = ROOT / "serving"
    if room == "root":
        files = sorted(p for p in base.rglob("*.py") if p.relative_to(base).parts[0] not in SERVING_ROOMS)
    else:
        files = sorted((base / room).rglob("*.py"))
    assert files, f"no module in serving/{room}"
    violations = [
        f"{path.relative_to(ROOT)}:{line} imports {module} ({room} -> {_serving_room(module)})"
        for path in files
        for line, module in _serving_imports(path)
        if _serving_room(module) not in SERVING_ALLOWED[room] | {room}
    ]
    assert not violations, "serving's runtimes tangled:\n" + "\n".join(violations)


def test_serving_room_rule_sees_a_crossing():
    """The rule above reads ``from papertrack.serving.http import schemas`` as batch -> http."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        module = Path(tmp) / "m.py"
        module.write_text("def f():\n    from papertrack.serving.http import schemas\n", encoding="utf-8")
        found = _serving_imports(module)
    assert [(line, _serving_room(m)) for line, m in found] == [(2, "http"), (2, "http")]


def test_the_shared_layer_imports_no_layer_above_features():
    files = [ROOT / "papertrack" / f"{name}.py" for name in SHARED_MODULES if name != "cli"]
    violations = _violations(files, "shared")
    assert not violations, "\n".join(violations)


@pytest.mark.slow  # a fresh interpreter importing the stack
def test_serving_loads_neither_training_nor_matplotlib():
    code = (
        "import json, sys\n"
        "import papertrack.serving.http.service, papertrack.serving.batch.labeler\n"
        "print(json.dumps(sorted(n for n in sys.modules if n.startswith('papertrack.training') "
        "or n.split('.')[0] == 'matplotlib')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == [], f"serving loaded {loaded}"


@pytest.mark.slow  # a fresh interpreter importing the stack
def test_serving_runtimes_load_apart():
    """At run time too: the batch commands and engines load no HTTP module, the service no batch module."""
    code = (
        "import json, sys\n"
        "import papertrack.serving.batch.label_command, papertrack.serving.batch.suggest_command\n"
        "import papertrack.serving.batch.labeler.spark, papertrack.serving.batch.drift_report\n"
        "batch = sorted(n for n in sys.modules if n.startswith('papertrack.serving.http'))\n"
        "for name in [n for n in sys.modules if n.startswith('papertrack.serving')]:\n"
        "    del sys.modules[name]\n"
        "import papertrack.serving.http.service, papertrack.serving.http.serve_command\n"
        "http = sorted(n for n in sys.modules if n.startswith('papertrack.serving.batch'))\n"
        "print(json.dumps([batch, http]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [[], []]


def test_request_schemas_load_neither_mlflow_nor_pandas():
    code = (
        "import json, sys\nimport papertrack.serving.http.schemas\n"
        "print(json.dumps(sorted(n for n in ('mlflow', 'pandas') if n in sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
