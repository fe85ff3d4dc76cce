#!/usr/bin/env bash
# Set up (if needed), then lint, format check and type check (each stops the run at its first failure), then the
# whole test suite. Extra arguments go to pytest (e.g. `scripts/test.sh -m "not slow"`: the fast suite).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "ruff check"
.venv/bin/ruff check .
echo "ruff format --check"
.venv/bin/ruff format --check .
echo "mypy ([tool.mypy] in pyproject.toml: the shared layer papertrack/ and models/)"
.venv/bin/mypy
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true BENTOML_DO_NOT_TRACK=true
exec .venv/bin/python -m pytest "$@"
