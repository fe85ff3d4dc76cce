#!/usr/bin/env bash
# The main job, end to end on the shared data: set up, train the sweep (every candidate an MLflow run),
# register the champion, then batch-label the sample dump with it.
# Then `.venv/bin/papertrack serve` serves the champion over HTTP (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh core  # papertrack alone: the default sweep needs no torch (scripts/test.sh adds the extras)
DATA_DIR=${PAPERTRACK_DATA_DIR:-../shared/data}
# the default data: every labeled *_topics.jsonl in $DATA_DIR (ICLR 2024, ICML 2024, ICLR 2025, and ICML 2025 and
# NeurIPS 2025 in their own taxonomies, taught by the older papers through the shipped crosswalks); the champion is
# chosen on the temporal holdout (trained on 2024, tested on each 2025 source in its own names)
# train ends with the sweep's leaderboard (`papertrack runs` prints it again, from the store, whenever asked)
PAPERTRACK_DATA_DIR="$DATA_DIR" .venv/bin/papertrack train
mkdir -p out
.venv/bin/papertrack label "$DATA_DIR/samples/labeled_dump.txt" -o out/labeled_dump.jsonl
echo "(The sample dump's abstracts are also in the training data, so its top-1/top-3 above is not an accuracy"
echo " figure: the next-year (temporal holdout) metrics printed by 'papertrack train' are.)"
.venv/bin/papertrack taxonomies
echo "Labeled output: out/labeled_dump.jsonl   MLflow UI: .venv/bin/papertrack ui"
