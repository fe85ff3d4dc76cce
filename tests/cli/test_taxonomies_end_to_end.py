"""Tracks move, end to end: train on the four labeled sources (a small subset, the shipped crosswalk), then ask
every interface for each taxonomy — CLI (taxonomies, label --taxonomy, runs), Python, the pyfunc, HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import THREE_SOURCES, sources_subset
from tests.processes import papertrack_serve

pytestmark = pytest.mark.slow
PAPERTRACK = str(Path(sys.executable).with_name("papertrack"))
FOUR_SOURCES = (*THREE_SOURCES, "icml2025_dev_topics.jsonl")


@pytest.fixture(scope="module")
def store(data_dir, tmp_path_factory):
    if not (data_dir / "icml2025_dev_topics.jsonl").exists():
        pytest.skip("icml2025_dev_topics.jsonl not in the shared data")
    folder = tmp_path_factory.mktemp("taxonomies")
    data = sources_subset(data_dir, folder / "four.jsonl", 6, FOUR_SOURCES)
    icml2025 = folder / "four.icml2025_dev_topics.jsonl"  # the ICML 2025 part sources_subset wrote
    home = folder / "home"
    env = {**os.environ, "PAPERTRACK_HOME": str(home), "BENTOML_HOME": str(folder / "bentoml")}
    env.pop("MLFLOW_TRACKING_URI", None)
    done = subprocess.run(
        [PAPERTRACK, "train", "--data", str(data), "-c", "tfidf-word-logreg", "--folds", "3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    kept = json.loads((home / "registry_cache.json").read_text(encoding="utf-8"))  # as train left it
    return {
        "env": env,
        "home": home,
        "icml2025": icml2025,
        "folder": folder,
        "train": done.stdout + done.stderr,
        "kept": kept,
    }


def run(store, *args, check=True):
    done = subprocess.run([PAPERTRACK, *args], env=store["env"], capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_the_sweep_says_and_logs_each_taxonomys_figures(store):
    out = " ".join(store["train"].split())  # the console wraps long lines
    assert "taxonomies: ICLR 2025 (" in out and "ICML 2025 (" in out and "default ICLR 2025" in out
    assert "ICML 2025: temporal holdout" in out
    board = json.loads(run(store, "runs", "--json").stdout)
    (row,) = board
    for key in ("temporal_label_top3.iclr2025", "temporal_label_top3.icml2025", "known_label_top3.icml2025"):
        assert 0.0 < row[key] <= 1.0, key


def test_train_leaves_the_champion_and_the_leaderboard_for_the_read_commands(store):
    """The first ``label``, ``taxonomies`` or ``runs`` after a train asks MLflow nothing (papertrack.registry_cache)."""
    assert set(store["kept"]["entries"]) == {"papertrack@champion"}
    (board,) = [kept["board"] for asked, kept in store["kept"]["answers"].items() if json.loads(asked)[0] == "runs"]
    assert [row["candidate"] for row in board] == ["tfidf-word-logreg"] and board[0]["champion"]


def test_papertrack_taxonomies_lists_labels_records_and_sources(store):
    found = json.loads(run(store, "taxonomies", "--json").stdout)
    assert [t["name"] for t in found] == ["ICLR 2025", "ICML 2025"] and found[0]["default"]
    assert found[0]["sources"] == ["ICLR 2024", "ICML 2024", "ICLR 2025"]
    icml = found[1]
    labels = {item["label"]: item["records"] for item in icml["labels"]}
    assert "Position · Methodology" in labels and "General Machine Learning · Causality" in labels
    assert "Miscellaneous Aspects of Machine Learning · Causality" not in labels
    # the records per label are the taxonomy's own papers (its head also learns from the older ones, mapped)
    assert labels["General Machine Learning · Causality"] == 6  # the subset: at most 6 per label and source
    assert "Position" in icml["areas"]


def test_taxonomies_reads_the_summary_saved_with_the_model_and_imports_no_scikit_learn(store):
    run(store, "taxonomies", "--json")  # the registry cache now knows the champion's files
    code = (
        "import json, sys\nfrom papertrack.cli import main\nsys.argv = ['papertrack', 'taxonomies', '--json']\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
        "imported = sorted(m for m in ('sklearn', 'mlflow') if m in sys.modules)\n"
        "from papertrack import store\nfrom papertrack.models.taxonomy_summary import describe\n"
        "from papertrack.serving.model_loader import load_model\n"
        "loaded = describe(load_model('models:/papertrack@champion', store.open(create=False)).predictor)\n"
        "print(json.dumps([imported, loaded]), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=store["env"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    imported, loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert imported == []  # neither the predictor unpickled nor the registry asked
    found = json.loads(done.stdout)
    assert found == loaded and [t["name"] for t in found] == ["ICLR 2025", "ICML 2025"]


def test_a_damaged_taxonomies_summary_is_named_not_believed(store):
    run(store, "taxonomies", "--json")
    (summary,) = store["home"].rglob("artifacts/taxonomies.json")
    saved = summary.read_bytes()
    try:
        summary.write_bytes(saved.replace(b'"ICML 2025"', b'"ICML 2026"'))
        done = run(store, "taxonomies", check=False)
        assert done.returncode != 0 and "ICML 2026" not in done.stdout
        assert "taxonomies.json" in done.stderr and "is damaged" in done.stderr, done.stderr
    finally:
        summary.write_bytes(saved)


def test_label_answers_in_the_asked_taxonomy_and_warns_of_names_it_cannot_answer(store):
    folder, dump = store["folder"], store["icml2025"]
    run(store, "label", str(dump), "-o", str(folder / "icml.jsonl"), "--taxonomy", "icml 2025")
    rows = [json.loads(line) for line in (folder / "icml.jsonl").read_text().splitlines()]
    drift = json.loads((folder / "icml.drift.json").read_text())
    icml_labels = {t["label"] for t in json.loads(run(store, "taxonomies", "--json").stdout)[1]["labels"]}
    assert all(t["label"] in icml_labels for r in rows for t in r["tracks"])
    assert drift["given_labels"]["unknown"] == 0 and drift["given_labels"]["taxonomy"] == "ICML 2025"

    done = run(store, "label", str(dump), "-o", str(folder / "default.jsonl"), check=False)
    assert done.returncode == 0, done.stderr
    drift = json.loads((folder / "default.drift.json").read_text())
    given = drift["given_labels"]
    assert given["taxonomy"] == "ICLR 2025" and given["unknown"] > 100
    assert any(u["label"].startswith("General Machine Learning") for u in given["unknown_names"])
    assert "given labels are names the model cannot answer in ICLR 2025" in " ".join(
        (done.stdout + done.stderr).split()
    )


def test_an_unknown_taxonomy_is_a_usage_error_listing_the_known_ones(store):
    done = run(
        store,
        "label",
        str(store["icml2025"]),
        "-o",
        str(store["folder"] / "x.jsonl"),
        "-t",
        "NeurIPS 2030",
        check=False,
    )
    assert done.returncode == 2
    assert "unknown taxonomy 'NeurIPS 2030'; this model answers in: ICLR 2025, ICML 2025" in " ".join(
        done.stderr.split()
    )
    assert not (store["folder"] / "x.jsonl").exists()


def test_python_and_the_pyfunc_answer_in_the_asked_taxonomy(store):
    code = """
import json, mlflow, pandas as pd, papertrack, papertrack.store
model = papertrack.load()
text = "Position: we argue that the community should rethink how machine learning research is evaluated."
answer = model.predict([text], taxonomy="ICML 2025")[0]
with papertrack.store.using(papertrack.store.open(create=False)):
    pyfunc = mlflow.pyfunc.load_model("models:/papertrack@champion")
frame = pyfunc.predict(pd.DataFrame({"abstract": [text]}), params={"top_k": 3, "taxonomy": "ICML 2025"})
print(json.dumps({"taxonomies": model.taxonomies, "api": answer, "pyfunc": frame["taxonomy"].tolist(),
                  "pyfunc_tracks": [t["label"] for t in frame["tracks"][0]],
                  "default": model.predict([text])[0]["taxonomy"]}))
"""
    done = subprocess.run([sys.executable, "-c", code], env=store["env"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["taxonomies"] == ["ICLR 2025", "ICML 2025"] and out["default"] == "ICLR 2025"
    assert out["api"]["taxonomy"] == "ICML 2025" and out["pyfunc"] == ["ICML 2025"]
    assert sum(a["probability"] for a in out["api"]["areas"]) == pytest.approx(1.0)
    assert [t["label"] for t in out["api"]["tracks"]] == out["pyfunc_tracks"]


def test_the_service_answers_in_the_asked_taxonomy(store):
    with papertrack_serve(store["env"], store["folder"] / "serve.log") as url:
        meta = httpx.get(f"{url}/metadata").json()
        assert meta["default_taxonomy"] == "ICLR 2025" and list(meta["taxonomies"]) == ["ICLR 2025", "ICML 2025"]
        abstract = "We study jailbreak attacks on aligned language models and propose a safety defense."
        answer = httpx.post(f"{url}/predict", json={"abstract": abstract, "taxonomy": "ICML 2025"}).json()
        assert answer["taxonomy"] == "ICML 2025"
        assert all(t["label"] in meta["taxonomies"]["ICML 2025"]["labels"] for t in answer["tracks"])
        batch = httpx.post(
            f"{url}/predict_batch", json={"papers": [{"abstract": abstract}], "taxonomy": "icml 2024"}
        ).json()
        assert batch["results"][0]["taxonomy"] == "ICLR 2025"  # a source's name is its taxonomy's
        explained = httpx.post(f"{url}/explain", json={"abstract": abstract, "taxonomy": "ICML 2025"}).json()
        assert explained["taxonomy"] == "ICML 2025"
        bad = httpx.post(f"{url}/predict", json={"abstract": abstract, "taxonomy": "NeurIPS 2030"})
        assert bad.status_code == 400
        assert "this model answers in: ICLR 2025, ICML 2025" in bad.json()["error"]
        assert bad.json()["detail"][0]["loc"] == ["taxonomy"]
        # /drift: against the asked taxonomy's training papers (its own label distribution, its own names)
        papers = {"papers": [{"abstract": abstract}, {"abstract": "Position: benchmarks should report variance."}]}
        default = httpx.post(f"{url}/drift", json=papers).json()
        icml = httpx.post(f"{url}/drift", json={**papers, "taxonomy": "ICML 2025"}).json()
        assert default["taxonomy"] == "ICLR 2025" and icml["taxonomy"] == "ICML 2025"
        assert default["records"] == icml["records"] == 2
        assert default["holdout"]["records"] != icml["holdout"]["records"]  # each taxonomy's own profile
        assert default["label_js"] != icml["label_js"]
        assert httpx.post(f"{url}/drift", json={**papers, "taxonomy": "NeurIPS 2030"}).status_code == 400
