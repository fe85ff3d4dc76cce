#!/usr/bin/env bash
# Set up (if needed), then lint, format check, type check and import contracts (each stops the run at its first
# failure), then the whole test suite. Extra arguments go to pytest (e.g. `scripts/test.sh -m "not slow"`: the fast suite).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "ruff check"
.venv/bin/ruff check .
echo "ruff format --check"
.venv/bin/ruff format --check .
echo "mypy ([tool.mypy] in pyproject.toml: the shared layer papertrack/ and models/)"
.venv/bin/mypy
echo "lint-imports ([tool.importlinter] in pyproject.toml: the import arrows between the package's layers)"
.venv/bin/lint-imports
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true BENTOML_DO_NOT_TRACK=true
exec .venv/bin/python -m pytest "$@"
