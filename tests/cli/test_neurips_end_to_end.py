"""A third venue found as data, end to end: a data folder holding the five labeled sources (a small subset of each,
under their own file names), the default `papertrack train` (no --data, no --crosswalk), then NeurIPS 2025 asked for
through every interface the ``taxonomy`` field reaches — CLI (taxonomies, label local and Spark, suggest), Python,
the pyfunc, HTTP — each answering in NeurIPS 2025's own names, with its own calibration and prediction sets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import stratified_subset
from tests.processes import papertrack_serve

pytestmark = pytest.mark.slow
PAPERTRACK = str(Path(sys.executable).with_name("papertrack"))
FIVE_SOURCES = (
    "iclr2024_topics.jsonl",
    "icml2024_topics.jsonl",
    "iclr2025_dev_topics.jsonl",
    "icml2025_dev_topics.jsonl",
    "neurips2025_dev_topics.jsonl",
)
NEURIPS = "NeurIPS 2025"


@pytest.fixture(scope="module")
def store(data_dir, tmp_path_factory):
    if not (data_dir / "neurips2025_dev_topics.jsonl").exists():
        pytest.skip("neurips2025_dev_topics.jsonl not in the shared data")
    folder = tmp_path_factory.mktemp("neurips")
    data = folder / "data"
    data.mkdir()
    for name in FIVE_SOURCES:
        stratified_subset(data_dir / name, data / name, 6)
    (data / "readme_topics.jsonl").write_text("# not data\n", encoding="utf-8")  # matches the rule: skipped, said
    home = folder / "home"
    env = {
        **os.environ,
        "PAPERTRACK_HOME": str(home),
        "PAPERTRACK_DATA_DIR": str(data),
        "BENTOML_HOME": str(folder / "bentoml"),
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    done = subprocess.run(
        [PAPERTRACK, "train", "-c", "tfidf-word-logreg", "--folds", "3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    dump = folder / "neurips.jsonl"
    dump.write_text((data / "neurips2025_dev_topics.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    return {"env": env, "folder": folder, "dump": dump, "train": done.stdout + done.stderr}


def run(store, *args, check=True):
    done = subprocess.run([PAPERTRACK, *args], env=store["env"], capture_output=True, text=True, timeout=900)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def neurips_labels(store) -> set[str]:
    found = json.loads(run(store, "taxonomies", "--json").stdout)
    return {item["label"] for item in next(t for t in found if t["name"] == NEURIPS)["labels"]}


def test_the_default_train_finds_the_venue_and_logs_its_figures(store):
    out = " ".join(store["train"].split())
    assert "skipped" in out and "readme_topics.jsonl" in out and "not JSON" in out
    assert "NeurIPS 2025 (59 labels" in out and "2024-icml2025-to-neurips2025.yaml" in out
    (row,) = json.loads(run(store, "runs", "--json").stdout)
    for key in ("temporal_label_top3.neurips2025", "known_label_top3.neurips2025"):
        assert 0.0 < row[key] <= 1.0, key
    found = json.loads(run(store, "taxonomies", "--json").stdout)
    assert [t["name"] for t in found] == ["ICLR 2025", "ICML 2025", NEURIPS]
    neurips = found[2]
    assert neurips["sources"] == [NEURIPS] and "Computer Vision" in neurips["areas"]
    assert "Data-centric AI" in neurips["areas"] and "Miscellaneous Aspects of Machine Learning" not in neurips["areas"]


def test_label_and_suggest_answer_in_neurips_names(store):
    folder, names = store["folder"], neurips_labels(store)
    run(store, "label", str(store["dump"]), "-o", str(folder / "local.jsonl"), "--taxonomy", "neurips 2025")
    rows = [json.loads(line) for line in (folder / "local.jsonl").read_text().splitlines()]
    assert rows and all(t["label"] in names for r in rows for t in r["tracks"])
    drift = json.loads((folder / "local.drift.json").read_text())
    assert drift["given_labels"]["taxonomy"] == NEURIPS and drift["given_labels"]["unknown"] == 0
    done = run(store, "suggest", str(store["dump"]), "-o", str(folder / "picks.jsonl"), "-t", NEURIPS, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    picks = [json.loads(line) for line in (folder / "picks.jsonl").read_text().splitlines()]
    assert picks and all(p["label"] in names for p in picks if p.get("label"))


def test_spark_labels_in_neurips_names(store):
    pytest.importorskip("pyspark")
    folder, names = store["folder"], neurips_labels(store)
    out = folder / "spark.jsonl"
    run(store, "label", str(store["dump"]), "-o", str(out), "--engine", "spark", "--master", "local[1]", "-t", NEURIPS)
    rows = [json.loads(line) for part in sorted((out / "labels").glob("part-*")) for line in part.open()]
    assert rows and all(t["label"] in names for r in rows for t in r["tracks"])


def test_python_and_the_pyfunc_answer_in_neurips_names_with_its_own_calibration(store):
    code = """
import json, mlflow, pandas as pd, papertrack, papertrack.store
model = papertrack.load()
text = "We propose a diffusion model for video generation with temporally consistent frames."
answer = model.predict([text], taxonomy="NeurIPS 2025")[0]
with papertrack.store.using(papertrack.store.open(create=False)):
    pyfunc = mlflow.pyfunc.load_model("models:/papertrack@champion")
frame = pyfunc.predict(pd.DataFrame({"abstract": [text]}), params={"top_k": 3, "taxonomy": "NeurIPS 2025"})
heads = model.predictor.heads
print(json.dumps({"taxonomies": model.taxonomies, "api": answer, "pyfunc": frame["taxonomy"].tolist(),
                  "pyfunc_tracks": [t["label"] for t in frame["tracks"][0]],
                  "threshold": heads["NeurIPS 2025"].confidence.top1_threshold,
                  "icml_threshold": heads["ICML 2025"].confidence.top1_threshold,
                  "n_labels": heads["NeurIPS 2025"].space.n_labels}))
"""
    done = subprocess.run([sys.executable, "-c", code], env=store["env"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["taxonomies"] == ["ICLR 2025", "ICML 2025", NEURIPS]
    assert out["api"]["taxonomy"] == NEURIPS and out["pyfunc"] == [NEURIPS]
    assert {t["label"] for t in out["api"]["tracks"]} <= neurips_labels(store) and out["n_labels"] == 59
    assert [t["label"] for t in out["api"]["tracks"]] == out["pyfunc_tracks"]
    assert out["threshold"] != out["icml_threshold"]  # its own calibration, not another head's
    assert set(out["api"]["prediction_set"]) <= neurips_labels(store)  # its own prediction sets


def test_the_service_answers_in_neurips_names(store):
    with papertrack_serve(store["env"], store["folder"] / "serve.log") as url:
        meta = httpx.get(f"{url}/metadata").json()
        assert list(meta["taxonomies"]) == ["ICLR 2025", "ICML 2025", NEURIPS]
        abstract = "We segment 3D point clouds and reconstruct scenes from multi-view images."
        answer = httpx.post(f"{url}/predict", json={"abstract": abstract, "taxonomy": NEURIPS}).json()
        assert answer["taxonomy"] == NEURIPS
        assert all(t["label"] in meta["taxonomies"][NEURIPS]["labels"] for t in answer["tracks"])
        batch = httpx.post(f"{url}/predict_batch", json={"papers": [{"abstract": abstract}], "taxonomy": NEURIPS})
        assert batch.json()["results"][0]["taxonomy"] == NEURIPS
        page = httpx.get(f"{url}/")
        assert page.status_code == 200
