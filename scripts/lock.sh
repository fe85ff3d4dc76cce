#!/usr/bin/env bash
# Refresh the lock files from pyproject.toml's ranges: requirements/all.lock (papertrack with every extra and the
# test tools: what scripts/test.sh and CI install) and requirements/core.lock (papertrack alone: what
# scripts/quickstart.sh installs), both with hashes (pip-tools' pip-compile, run from a tool venv of its own).
# core.lock is compiled from all.lock's pins, so the two never disagree. Prints what moved, then: run
# scripts/test.sh (it installs the new lock into .venv) and commit the locks only when it is green.
#   scripts/lock.sh                  follow pyproject.toml (added or removed dependencies), keeping every other pin
#   scripts/lock.sh --upgrade        every dependency to its newest release within the ranges
#   scripts/lock.sh -P uvicorn       that package to its newest release (pip-compile's --upgrade-package; repeatable)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
tools=${XDG_CACHE_HOME:-$HOME/.cache}/papertrack/lock-tools
if [ ! -x "$tools/bin/pip-compile" ]; then
  "$PYTHON" -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet "pip-tools>=7.4,<8"
fi
# name=version per line, sorted on the name as join(1) reads it (sorting "a==1" lines would put "pytest-xdist"
# before "pytest", and join would miss both)
pins() { grep -E '^[A-Za-z0-9_.-]+==' "$1" | sed 's/ .*//; s/==/=/' | LC_ALL=C sort -t= -k1,1; }
old=$(mktemp)
trap 'rm -f "$old"' EXIT
pins requirements/all.lock >"$old"
compile=("$tools/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url
  --no-emit-find-links)
"${compile[@]}" "$@" --extra embeddings,spark,team,dev -o requirements/all.lock pyproject.toml
cp requirements/all.lock requirements/core.lock  # pip-compile keeps the pins it finds in its output file
"${compile[@]}" -o requirements/core.lock pyproject.toml
"${compile[@]}" -o requirements/uv.lock requirements/uv.in  # what scripts/setup.sh core installs with
echo "what moved in requirements/all.lock:"
LC_ALL=C join -a1 -a2 -e '-' -o 0,1.2,2.2 -t= "$old" <(pins requirements/all.lock) |
  awk -F= '$2 != $3 {print "  " $1 ": " $2 " -> " $3; n++} END {if (!n) print "  nothing"}'
echo "next: scripts/test.sh (installs the new lock into .venv); commit requirements/ when it is green"
