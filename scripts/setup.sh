#!/usr/bin/env bash
# Create .venv (Python 3.11) and install papertrack with its extras (embeddings, spark, team) and the test tools.
# `scripts/setup.sh core` installs papertrack alone (what the main job needs: TF-IDF models, MLflow, BentoML),
# without torch, Spark, psycopg or the test tools. Idempotent: a second run only checks what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
# The editable install is setuptools' default mode. Static tools (mypy, pyright, IDEs) need no help from it:
# papertrack/features, models, training and serving are symbolic links to the root folders, so the checkout itself
# is the plain package tree `papertrack.*` (pyproject.toml). Not editable_mode=strict: a module added later would be
# missing from the installed CLI until the next install; not compat: it would put the repository root on sys.path
# (a top-level `models`, `tests`, ... importable).
# torch==2.13.0 is pinned in the [embeddings] extra: pip takes the local CPU wheel instead of a CUDA build.
# Byte-compiled modules: with PYTHONDONTWRITEBYTECODE set (it is on the team's machines) Python never caches what it
# compiles, so every command compiled MLflow, scikit-learn, pandas, ... again at each start (half of `papertrack
# taxonomies`' 23 s). The full install lets pip compile everything (the test suite starts hundreds of processes);
# `core` skips pip's compile of all ~40,000 files (98.6 -> 46.8 s, quiet machine) and compiles only what the
# main job's commands import (~11 s; `runs` 15.5 -> 7.4 s, `taxonomies` 22.9 -> 10.0 s, `label` 29.0 -> 9.3 s,
# loaded machine).
if [ "${1:-all}" = core ]; then
  .venv/bin/python -m pip install --quiet --progress-bar off --no-compile -e .
  env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -c "
import papertrack.cli, papertrack.training.pipeline, papertrack.training.sweep, papertrack.serving.batch.labeler
import papertrack.serving.taxonomies_command, mlflow.pyfunc, mlflow.tracking, sklearn.linear_model, sklearn.svm
import sklearn.naive_bayes, sklearn.feature_extraction.text, joblib, pandas, scipy.sparse, rich, bentoml"
else
  .venv/bin/python -m pip install --quiet --progress-bar off -e ".[embeddings,spark,team,dev]"
fi
.venv/bin/papertrack --help >/dev/null
echo "papertrack installed in $(pwd)/.venv"
