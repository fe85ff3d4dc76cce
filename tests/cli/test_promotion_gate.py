"""Hostile input, round three, finding 1: a bad training run never takes the tool down.

A tiny random-label run does not replace a real champion (far fewer labels, calibration checks); a valid champion
with fewer labels than the default top_k serves and labels (the default is clipped and said), instead of
crash-looping; a changed-data winner is compared with the champion's recipe re-scored on the new holdout."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import sources_subset
from tests.processes import papertrack_serve

pytestmark = pytest.mark.slow
PAPERTRACK = str(Path(sys.executable).with_name("papertrack"))


def _env(home: Path) -> dict:
    env = {**os.environ, "PAPERTRACK_HOME": str(home), "BENTOML_HOME": str(home / "bentoml")}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def _run(env, *args, timeout=900):
    return subprocess.run([PAPERTRACK, *args], env=env, capture_output=True, text=True, timeout=timeout)


def _tiny(path: Path, n: int = 30) -> Path:
    rng = random.Random(0)
    words = [f"term{i}" for i in range(60)]  # each abstract 15 of 60 words: TF-IDF keeps terms
    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            text = " ".join(rng.sample(words, 15)) + f" paper number {i}"
            label = rng.choice(["Theory · Learning Theory", "Deep Learning · Attention Mechanisms"])
            out.write(json.dumps({"id": f"t{i}", "abstract": text, "label": label}) + "\n")
    return path


@pytest.fixture(scope="module")
def real_champion(data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gate")
    data = sources_subset(data_dir, folder / "two.jsonl", 6)
    env = _env(folder / "home")
    done = _run(env, "train", "--data", str(data), "-c", "tfidf-word-logreg", "--folds", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "as champion" in " ".join(done.stdout.split())
    return {"env": env, "folder": folder, "data": data}


def test_a_tiny_random_label_run_does_not_replace_the_champion(real_champion):
    tiny = _tiny(real_champion["folder"] / "tiny.jsonl")
    done = _run(real_champion["env"], "train", "--data", str(tiny), "-c", "tfidf-word-logreg", "--folds", "2")
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, out
    assert "as challenger" in out and "not promoted: " in out
    assert "knows 2 labels, far fewer than champion v1's" in out
    versions = json.loads(_run(real_champion["env"], "taxonomies", "--json").stdout)
    assert versions[0]["n_labels"] > 2  # the champion still is the real model


def test_a_changed_data_winner_is_compared_with_the_champions_recipe(real_champion, data_dir):
    # the same data plus one record: the data digest changes; the champion (logreg) is re-scored, not waved through
    folder = real_champion["folder"]
    more = folder / "more.jsonl"
    extra = (data_dir / "icml2024_topics.jsonl").read_text(encoding="utf-8").splitlines()[-1]
    more.write_text(real_champion["data"].read_text(encoding="utf-8") + extra + "\n", encoding="utf-8")
    done = _run(real_champion["env"], "train", "--data", str(more), "-c", "tfidf-word-cnb", "--folds", "3")
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, out
    assert "re-scoring its recipe (tfidf-word-logreg)" in out
    assert "the champion re-scored on the new holdout" in out


def test_a_champion_with_two_labels_serves_and_labels(tmp_path):
    env = _env(tmp_path / "home")
    tiny = _tiny(tmp_path / "tiny.jsonl", 40)
    done = _run(env, "train", "--data", str(tiny), "-c", "tfidf-word-logreg", "--folds", "2")
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0 and "as champion" in out and "but check it:" in out, out
    assert "top_k must be" not in out  # MLflow's check of the logged input example calls the pyfunc with defaults
    pyfunc = """
import json, mlflow, pandas as pd, papertrack.store
with papertrack.store.using(papertrack.store.open(create=False)):
    model = mlflow.pyfunc.load_model("models:/papertrack@champion")
frame = model.predict(pd.DataFrame({"abstract": ["attention token graph"]}))  # top_k not given: the default
print(json.dumps([len(frame["tracks"][0]), str(model.predict(pd.DataFrame({"abstract": ["x y"]}), {"top_k": 1})
                  ["tracks"][0][0]["label"])]))
"""
    answered = subprocess.run([sys.executable, "-c", pyfunc], env=env, capture_output=True, text=True, timeout=300)
    assert answered.returncode == 0, answered.stderr
    both, one = json.loads(answered.stdout.strip().splitlines()[-1])
    assert both == 2 and one in {"Theory · Learning Theory", "Deep Learning · Attention Mechanisms"}
    labeled = _run(env, "label", str(tiny), "-o", str(tmp_path / "out.jsonl"))
    assert labeled.returncode == 0, labeled.stderr
    assert "answering with --top-k 2 instead of 3" in " ".join(labeled.stderr.split())
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and all(len(r["tracks"]) == 2 for r in rows)
    with papertrack_serve(env, tmp_path / "serve.log") as url:
        answer = httpx.post(f"{url}/predict", json={"abstract": "attention token graph"}).json()
        assert len(answer["tracks"]) == 2
        too_many = httpx.post(f"{url}/predict", json={"abstract": "attention", "top_k": 5})
        assert too_many.status_code == 400 and "between 1 and 2" in too_many.text
