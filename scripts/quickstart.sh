#!/usr/bin/env bash
# The main job, end to end on the shared data: set up, train the sweep (every candidate an MLflow run),
# register the champion, then batch-label the sample dump with it.
# Then `.venv/bin/papertrack serve` serves the champion over HTTP (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
DATA_DIR=${PAPERTRACK_DATA_DIR:-../shared/data}
# the default data: both labeled years (iclr2024_topics.jsonl and icml2024_topics.jsonl in $DATA_DIR)
PAPERTRACK_DATA_DIR="$DATA_DIR" .venv/bin/papertrack train
.venv/bin/papertrack runs
mkdir -p out
.venv/bin/papertrack label "$DATA_DIR/samples/labeled_dump.txt" -o out/labeled_dump.jsonl
echo "(The sample dump's abstracts are also in the training data, so its top-1/top-3 above is not an accuracy"
echo " figure: the cross-validated and shift-holdout metrics printed by 'papertrack train' are.)"
echo "Labeled output: out/labeled_dump.jsonl   MLflow UI: .venv/bin/mlflow ui --backend-store-uri sqlite:///$(pwd)/.papertrack/mlflow.db"
