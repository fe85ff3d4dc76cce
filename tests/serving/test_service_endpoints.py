"""In-process tests of the BentoML service class: the champion imported into its model store, every endpoint's
answer (the registered pyfunc's), the OpenAPI spec, and `bentoml build`.

The champion comes from the session fixture ``trained``; it is imported into a temporary BentoML home
so the user's model store is never touched. Requests go through the real ASGI app of the service
(``PaperTrack.to_asgi()``: BentoML's routes, middlewares and validation) with Starlette's TestClient.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from papertrack import settings
from papertrack.errors import NoModelError
from tests.serving.abstracts import ABSTRACTS

os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pyfunc(trained):
    """(the champion's predictor, the registered pyfunc as MLflow users load it)."""
    import mlflow

    from papertrack import store as mlstore
    from papertrack.models.loading import load_predictor

    with mlstore.using(trained["store"]):
        return load_predictor(trained["model_uri"])[0], mlflow.pyfunc.load_model(trained["model_uri"])


# --------------------------------------------------------------------------- the model store


def test_import_champion_is_idempotent_and_keeps_mlflow_artifacts(imported, trained):
    from papertrack import store as mlstore
    from papertrack.serving.http import bento_store as store

    champion = store.find_champion(trained["store"])
    assert str(imported.tag) == champion.bento_tag == f"papertrack:v{champion.version}-{champion.run_id[:12]}"
    assert store.import_champion(trained["store"]).tag == imported.tag  # the stored copy is reused
    meta = imported.info.metadata
    assert meta["version"] == champion.version and meta["run_id"] == trained["result"].winner.run_id
    assert (Path(imported.path) / "mlflow_model" / "MLmodel").exists()
    from papertrack.models.loading import load_predictor

    with mlstore.using(trained["store"]):
        load_predictor(trained["model_uri"])  # the registry's own copy is still there after the import


def test_service_without_its_model_in_the_store_fails_fast(imported, monkeypatch):
    from papertrack.serving.http.service import PaperTrack

    monkeypatch.setenv(settings.BENTO_MODEL_ENV, "papertrack:v999-notthere")
    with pytest.raises(NoModelError, match="papertrack train"):
        PaperTrack()


# --------------------------------------------------------------------------- endpoints


def check_result(result: dict, top_k: int, n_labels: int) -> None:
    tracks, areas = result["tracks"], result["areas"]
    assert len(tracks) == top_k
    assert set(tracks[0]) == {"label", "area", "subarea", "probability"}
    probabilities = [t["probability"] for t in tracks]
    assert probabilities == sorted(probabilities, reverse=True)
    for track in tracks:
        assert track["label"].startswith(track["area"])
        assert track["subarea"] is None or track["label"] == f"{track['area']} · {track['subarea']}"
    area_p = [a["probability"] for a in areas]
    assert area_p == sorted(area_p, reverse=True)
    assert sum(area_p) == pytest.approx(1.0, abs=1e-6)
    assert 0 < top_k <= n_labels


def test_predict(client, pyfunc, imported):
    predictor, model = pyfunc
    response = client.post("/predict", json={"abstract": ABSTRACTS[0], "title": None, "top_k": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"tracks", "areas", "prediction_set", "confident", "taxonomy", "model"}
    assert body["taxonomy"] == predictor.taxonomy == "ICLR 2025"  # the default taxonomy, named after its latest source
    check_result(body, 3, predictor.space.n_labels)
    assert len(body["areas"]) == len(predictor.space.areas)
    assert body["model"] == {
        "name": "papertrack",
        "version": imported.info.metadata["version"],
        "run_id": imported.info.metadata["run_id"],
    }
    # the same answer as the registered pyfunc for the same abstract
    import pandas as pd

    expected = model.predict(pd.DataFrame({"abstract": [ABSTRACTS[0]]}), params={"top_k": 3}).iloc[0]
    assert body["tracks"] == list(expected["tracks"]) and body["areas"] == list(expected["areas"])
    assert body["prediction_set"] == list(expected["prediction_set"]) and body["confident"] == expected["confident"]


@pytest.mark.parametrize("top_k", [1, 5])
def test_predict_top_k_and_title(client, pyfunc, top_k):
    predictor, _ = pyfunc
    response = client.post(
        "/predict", json={"abstract": ABSTRACTS[1], "title": "Conservative offline RL", "top_k": top_k}
    )
    assert response.status_code == 200
    body = response.json()
    check_result(body, top_k, predictor.space.n_labels)
    assert body["tracks"] == predictor.predict([ABSTRACTS[1]], ["Conservative offline RL"], top_k)[0]["tracks"]


def test_predict_all_labels(client, pyfunc):
    n = pyfunc[0].space.n_labels
    body = client.post("/predict", json={"abstract": ABSTRACTS[2], "top_k": n}).json()
    assert sorted(t["label"] for t in body["tracks"]) == sorted(pyfunc[0].space.labels)
    assert sum(t["probability"] for t in body["tracks"]) == pytest.approx(1.0, abs=1e-6)


def test_predict_batch_keeps_order_and_matches_predict(client, pyfunc):
    papers = [{"abstract": a, "title": None} for a in ABSTRACTS] + [{"abstract": ABSTRACTS[0], "title": "x"}]
    response = client.post("/predict_batch", json={"papers": papers, "top_k": 2})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"results", "model"}
    assert len(body["results"]) == len(papers)
    for paper, result in zip(papers, body["results"]):
        assert set(result) == {"tracks", "areas", "prediction_set", "confident", "taxonomy"}
        check_result(result, 2, pyfunc[0].space.n_labels)
        single = client.post("/predict", json={**paper, "top_k": 2}).json()
        single.pop("model")
        assert result == single


def test_metadata(client, trained, imported, pyfunc):
    response = client.get("/metadata")
    assert response.status_code == 200
    meta = response.json()
    predictor = pyfunc[0]
    result = trained["result"]
    assert meta["model"]["version"] == imported.info.metadata["version"]
    assert meta["model"]["run_id"] == result.winner.run_id
    assert meta["bento_model"] == str(imported.tag)
    assert meta["data_digest"] == result.data_digest
    assert meta["candidate"] == result.winner.candidate.name
    assert meta["labels"] == list(predictor.space.labels) and meta["n_labels"] == predictor.space.n_labels
    assert meta["hierarchy"] == predictor.space.hierarchy()
    assert sorted(lab for labels in meta["hierarchy"].values() for lab in labels) == sorted(meta["labels"])
    assert meta["metrics"]["cv_label_top3"] == pytest.approx(result.winner.metrics["cv_label_top3"])
    assert meta["limits"] == {"max_abstract_chars": 20_000, "max_title_chars": 1_000, "max_batch": 1_000}


def test_bentoml_system_endpoints_and_openapi(client):
    for path in ("/healthz", "/livez", "/readyz"):
        assert client.get(path).status_code == 200, path
    metrics = client.get("/metrics")
    assert metrics.status_code == 200 and "text/plain" in metrics.headers["content-type"]
    assert client.get("/").status_code == 200
    spec = client.get("/docs.json").json()
    assert {"/predict", "/predict_batch", "/metadata"} <= set(spec["paths"])
    schemas = spec["components"]["schemas"]
    examples = json.dumps(schemas)
    assert '"example"' in examples and "sparse attention" in examples


def test_drift_endpoint_answers_the_drift_report_of_the_batch(client, pyfunc):
    """POST /drift: the numbers `papertrack label` computes, for the batch sent."""
    from papertrack.serving.http.drift_api import batch_report

    abstracts = [
        "We propose a sparse attention mechanism for transformers that reduces the quadratic cost of attention.",
        "We derive a conservative offline reinforcement learning method that avoids overestimated values.",
        "We prove convergence rates of stochastic gradient descent for non-convex smooth objectives.",
    ]
    response = client.post("/drift", json={"papers": [{"abstract": a} for a in abstracts]})
    assert response.status_code == 200, response.text
    body = response.json()
    expected = batch_report(pyfunc[0], abstracts, [None] * 3)
    assert body["records"] == 3 and body["model"]["run_id"]
    for key in ("label_js", "area_js", "unsure_share", "oov_share", "labels_moved_most", "outside"):
        assert body[key] == expected[key]
    assert client.post("/drift", json={"papers": []}).status_code == 400
    # the body of /predict_batch, top_k included, is a /drift body too
    same = client.post("/drift", json={"papers": [{"abstract": a} for a in abstracts], "top_k": 5})
    assert same.status_code == 200 and same.json()["label_js"] == expected["label_js"]
    assert client.post("/drift", json={"papers": [{"abstract": abstracts[0]}], "top_k": 0}).status_code == 400


def test_openapi_spec_matches_the_service(client, pyfunc):
    predictor, _ = pyfunc
    spec = client.get("/docs.json").json()
    assert spec["components"]["schemas"]["ErrorResponse"]["properties"]["detail"]["type"] == "array"
    for path in ("/predict", "/predict_batch"):
        operation = spec["paths"][path]["post"]
        assert operation["requestBody"]["required"] is True
        assert {"400", "413", "415", "421", "403"} <= set(operation["responses"])
        assert operation["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("ErrorResponse")
    assert spec["openapi"].startswith("3.1")  # FastAPI's spec: JSON Schema, where null is a type
    ref = spec["paths"]["/predict"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    request = spec["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert {"type": "null"} in request["properties"]["title"]["anyOf"]
    n_labels = predictor.space.n_labels
    assert request["properties"]["top_k"]["minimum"] == 1
    by_taxonomy = {  # the maximum when no taxonomy is asked, per the if/then rules
        rule["then"]["properties"]["top_k"]["maximum"]
        for rule in request["allOf"]
        if {"not": {"required": ["taxonomy"]}} in rule["if"]["anyOf"]
    }
    assert by_taxonomy == {n_labels} and request["properties"]["top_k"]["maximum"] >= n_labels
    explain = spec["components"]["schemas"]["ExplainRequest"]["properties"]
    assert explain["top_k"]["maximum"] <= 20 and explain["neighbors"]["minimum"] == 0
    assert not re.search(r'"(ge|le|gt|lt)":', json.dumps(spec))  # pydantic's names are no JSON Schema keywords
    assert len(json.dumps(request["properties"]["abstract"])) < 1000  # no giant regular expression
    assert "422" not in json.dumps(spec["paths"])  # invalid requests are 400s, as documented
    assert client.post("/predict", json={"abstract": ABSTRACTS[0], "title": None, "top_k": n_labels}).status_code == 200
    assert client.post("/predict", json={"abstract": ABSTRACTS[0], "top_k": n_labels + 1}).status_code == 400
    error = client.post("/predict", json={"abstract": 5}).json()
    assert isinstance(error["detail"], list)  # as the spec says


# --------------------------------------------------------------------------- the Bento


@pytest.mark.slow
def test_bentoml_build_packs_the_wheel_and_the_model(imported, bento_home, tmp_path):
    """`bentoml build` with the repo's bentofile.yaml (in a scratch build context), then the exported
    archive holds the papertrack wheel and the champion."""
    from papertrack.serving.http.bento_store import service_env
    from papertrack.serving.http.serve_command import build_wheel

    context = tmp_path / "ctx"
    context.mkdir()
    shutil.copy2(REPO / "bentofile.yaml", context / "bentofile.yaml")
    wheel = build_wheel(context / "dist")
    env = {**service_env(str(imported.tag)), "BENTOML_HOME": str(bento_home)}
    built = subprocess.run(
        [sys.executable, "-m", "bentoml", "build", "-o", "tag", str(context)],
        cwd=context,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    tag = built.stdout.strip().splitlines()[-1].removeprefix("__tag__:")
    archive = tmp_path / "papertrack.bento"
    exported = subprocess.run(
        [sys.executable, "-m", "bentoml", "export", tag, str(archive)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    version = str(imported.tag).split(":")[1]
    assert f"./env/python/wheels/{wheel.name}" in names
    assert f"./models/papertrack/{version}/mlflow_model/MLmodel" in names
    assert f"./models/papertrack/{version}/mlflow_model/artifacts/predictor.pkl" in names
    assert not any(name.startswith("./src/papertrack") for name in names)  # no shadowing copy of the package
