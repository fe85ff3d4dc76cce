#!/usr/bin/env bash
# Create .venv (Python 3.11) and install the exact versions CI passed with, from a lock file (requirements/*.lock,
# pip-tools' hashed requirements), then papertrack itself (editable, no dependency resolution).
# `scripts/setup.sh` installs requirements/all.lock: papertrack with its extras (embeddings, spark, team) and the test
# tools. `scripts/setup.sh core` installs requirements/core.lock: papertrack alone (what the main job needs: TF-IDF
# models, MLflow, BentoML), without torch, Spark, psycopg or the test tools. Idempotent: a second run only checks
# what is installed (and puts back anything that moved). `scripts/lock.sh` refreshes both locks from pyproject.toml's
# ranges (people who install papertrack as a library get those ranges, not the lock).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
  # core: the venv's own pip installs uv and checks; uv installs the lock
  [ "${1:-all}" = core ] || .venv/bin/python -m pip install --quiet --upgrade pip
fi
# The editable install is setuptools' default mode. Static tools (mypy, pyright, IDEs) need no help from it:
# papertrack/features, models, training and serving are symbolic links to the root folders, so the checkout itself
# is the plain package tree `papertrack.*` (pyproject.toml).
# torch==2.13.0 is pinned in the [embeddings] extra (and its CPU build, 2.13.0+cpu, in the lock with its hash).
# Byte-compiled modules: with PYTHONDONTWRITEBYTECODE set (it is on the team's machines) Python never caches what it
# compiles. The full install lets pip compile everything (the test suite starts hundreds of processes); `core` skips
# pip's compile of all ~40,000 files and compiles only what the main job's commands import (the plots too: the sweep's
# worker processes draw them, each importing matplotlib).
pip_install=(.venv/bin/python -m pip install --quiet --progress-bar off --require-hashes --no-deps)
if [ "${1:-all}" = core ]; then
  # uv (itself from requirements/uv.lock, hashed) installs the lock's wheels side by side, hashes required like
  # pip's; the full install stays on pip (it reads torch's CPU wheel from pip's configured find-links)
  "${pip_install[@]}" --no-compile -r requirements/uv.lock
  uv=(.venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps)
  "${uv[@]}" --require-hashes -r requirements/core.lock
  "${uv[@]}" -e .
  env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -c "
import papertrack.cli, papertrack.training.pipeline, papertrack.training.sweep, papertrack.serving.batch.labeler
import papertrack.serving.taxonomies_command, mlflow.pyfunc, mlflow.tracking, sklearn.linear_model, sklearn.svm
import sklearn.naive_bayes, sklearn.feature_extraction.text, joblib, pandas, scipy.sparse, rich, bentoml
import papertrack.training.plots, matplotlib.backends.backend_agg, PIL.PngImagePlugin"
else
  "${pip_install[@]}" -r requirements/all.lock
  .venv/bin/python -m pip install --quiet --progress-bar off --no-deps -e .
  # the editable package itself (pip compiles only what it installs): every command compiled it at each start
  env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m compileall -q papertrack features models training serving >/dev/null
fi
.venv/bin/python -m pip check >/dev/null || { .venv/bin/python -m pip check; exit 1; }
.venv/bin/papertrack --help >/dev/null
echo "papertrack installed in $(pwd)/.venv (versions from requirements/$([ "${1:-all}" = core ] && echo core || echo all).lock)"
