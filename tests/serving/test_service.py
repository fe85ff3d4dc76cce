"""In-process tests of the BentoML service class: every endpoint and every bad request (-> the right 4xx).

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

os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

REPO = Path(__file__).resolve().parents[2]

ABSTRACTS = [
    "We propose a sparse attention mechanism for transformers that reduces the quadratic cost of "
    "self-attention on long sequences while matching dense attention on language modeling benchmarks.",
    "We study offline reinforcement learning and derive a conservative policy gradient method that avoids "
    "overestimating the value of out-of-distribution actions.",
    "We prove convergence rates for stochastic gradient descent on non-convex objectives that satisfy the "
    "Polyak-Lojasiewicz inequality, and show the rates are tight.",
]


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


def test_no_champion_fails_fast_with_a_hint(tmp_path, monkeypatch, trained):
    from typer.testing import CliRunner

    from papertrack import store as mlstore
    from papertrack.cli import app
    from papertrack.serving.http import bento_store as store

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "empty-home"))
    with pytest.raises(NoModelError, match="papertrack train"):
        store.find_champion(mlstore.open())
    result = CliRunner().invoke(app, ["serve", "--port", "3999"])
    assert result.exit_code == 1
    assert "papertrack train" in " ".join(result.output.split())


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


# --------------------------------------------------------------------------- bad requests -> 4xx

LONG = "x" * 20_001
BAD_PREDICT = [
    ("missing abstract", {"title": "t"}, 400, "abstract: Field required"),
    ("empty abstract", {"abstract": ""}, 400, "abstract: the abstract is empty: send the paper's abstract text"),
    ("whitespace abstract", {"abstract": "  \n\t "}, 400, "only whitespace"),
    ("abstract not a string", {"abstract": 123}, 400, "abstract: Input should be a valid string"),
    ("abstract null", {"abstract": None}, 400, "abstract"),
    ("title not a string", {"abstract": "ok", "title": 5}, 400, "title"),
    ("top_k as string", {"abstract": "ok", "top_k": "3"}, 400, "top_k: Input should be a valid integer"),
    ("top_k float", {"abstract": "ok", "top_k": 2.5}, 400, "top_k"),
    ("top_k boolean", {"abstract": "ok", "top_k": True}, 400, "top_k"),
    ("top_k zero", {"abstract": "ok", "top_k": 0}, 400, "top_k: Input should be greater than or equal to 1"),
    ("top_k negative", {"abstract": "ok", "top_k": -3}, 400, "top_k"),
    ("top_k above the labels", {"abstract": "ok", "top_k": 500}, 400, "top_k must be between 1 and"),
    ("top_k huge", {"abstract": "ok", "top_k": 10**12}, 400, "top_k"),
    ("abstract too long", {"abstract": LONG}, 400, "abstract has 20,001 characters; at most 20,000 are accepted"),
    ("title too long", {"abstract": "ok", "title": "t" * 1001}, 400, "title"),
    ("unknown field", {"abstract": "ok", "topk": 3}, 400, "topk: Extra inputs are not permitted"),
]


@pytest.mark.parametrize("name,body,status,message", BAD_PREDICT, ids=[case[0] for case in BAD_PREDICT])
def test_bad_predict_requests(client, name, body, status, message):
    response = client.post("/predict", json=body)
    assert response.status_code == status, response.text
    error = response.json()
    assert message in error["error"], error
    assert isinstance(error["detail"], list) and error["detail"]


BAD_BATCH = [
    ("no papers", {"top_k": 3}, "papers: Field required"),
    ("empty batch", {"papers": []}, "papers: List should have at least 1 item"),
    ("papers not a list", {"papers": {"abstract": "ok"}}, "papers"),
    ("paper not an object", {"papers": ["just a string"]}, "papers[0]"),
    # (no valid paper: the whole batch is refused; a valid one beside them is answered, test_one_bad_paper.py)
    ("paper without abstract", {"papers": [{"title": "t"}, {"title": "u"}]}, "papers[1].abstract: Field required"),
    ("blank abstract in batch", {"papers": [{"abstract": ""}, {"abstract": " "}]}, "papers[1].abstract"),
    ("batch too large", {"papers": [{"abstract": "ok"}] * 1001}, "papers: List should have at most 1000 items"),
    ("top_k out of range", {"papers": [{"abstract": "ok"}], "top_k": 0}, "top_k"),
    ("top_k above the labels", {"papers": [{"abstract": "ok"}], "top_k": 999}, "top_k must be between 1 and"),
]


@pytest.mark.parametrize("name,body,message", BAD_BATCH, ids=[case[0] for case in BAD_BATCH])
def test_bad_batch_requests(client, name, body, message):
    response = client.post("/predict_batch", json=body)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]


RAW_BODIES = [
    ("invalid JSON", b'{"abstract": "unterminated', "application/json", 400, "Invalid JSON"),
    ("JSON array body", b'["an abstract"]', "application/json", 400, "Input should be an object"),
    ("JSON string body", b'"an abstract"', "application/json", 400, "Input should be an object"),
    ("empty body", b"", "application/json", 400, "abstract: Field required"),
    ("not UTF-8", b'{"abstract": "\xff\xfe"}', "application/json", 400, "invalid request"),
    ("text/plain", b'{"abstract": "ok"}', "text/plain", 415, "Content-Type: application/json"),
    ("form", b"abstract=ok", "application/x-www-form-urlencoded", 415, "Content-Type: application/json"),
    ("multipart", b"--x\r\n\r\nok\r\n--x--", "multipart/form-data; boundary=x", 415, "application/json"),
    ("pickle", b"\x80\x04N.", "application/vnd.bentoml+pickle", 415, "application/json"),
]


@pytest.mark.parametrize("path", ["/predict", "/predict_batch"])
@pytest.mark.parametrize("name,data,content_type,status,message", RAW_BODIES, ids=[c[0] for c in RAW_BODIES])
def test_malformed_bodies_and_content_types(client, path, name, data, content_type, status, message):
    response = client.post(path, content=data, headers={"Content-Type": content_type})
    assert response.status_code == status, response.text
    if name == "empty body" and path == "/predict_batch":
        message = "papers: Field required"
    assert message in response.json()["error"]


def test_json_with_charset_is_accepted(client):
    response = client.post(
        "/predict",
        content=json.dumps({"abstract": ABSTRACTS[0]}).encode(),
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 200


def test_wrong_method_and_unknown_path(client):
    assert client.get("/predict").status_code == 405
    assert client.post("/metadata", json={}).status_code == 405
    assert client.get("/nowhere").status_code == 404


def read_body(headers: list[tuple[bytes, bytes]], chunks: list[bytes], limit: int = 100):
    """What :func:`service.read_json_body` makes of a request with ``headers`` whose body comes in ``chunks``:
    the body, or the (status, error) it refuses it with."""
    import asyncio

    from starlette.requests import Request

    from papertrack.serving.http.bodies import read_json_body
    from papertrack.serving.http.error_answers import BadRequest

    pending = list(chunks)

    async def receive():
        data = pending.pop(0) if pending else b""
        return {"type": "http.request", "body": data, "more_body": bool(pending)}

    scope = {
        "type": "http",
        "path": "/predict",
        "method": "POST",
        "headers": [(b"content-type", b"application/json"), *headers],
    }
    try:
        return asyncio.run(read_json_body(Request(scope, receive), limit))
    except BadRequest as exc:
        return exc.status, exc.message


def test_bodies_over_the_limit_are_413_declared_or_chunked():
    """The size limit of the JSON endpoints, with a small limit (the real one is 32 MiB)."""
    status, message = read_body([(b"content-length", b"1000")], [b"x" * 1000])
    assert status == 413 and "limit is 100 bytes" in message
    status, message = read_body([], [b"x" * 60, b"x" * 60])  # chunked, no Content-Length
    assert status == 413 and "exceeds the limit of 100 bytes" in message
    assert read_body([], [b"x" * 40, b"x" * 40]) == b"x" * 80  # small chunked bodies come whole
    assert read_body([(b"content-length", b"abc")], [b""]) == (400, "invalid Content-Length header")
    assert read_body([(b"content-length", b"0")], [b""]) == b"{}"  # an empty body is an empty object


# --------------------------------------------------------------------------- the Bento


def test_bentofile_matches_the_package():
    import yaml

    from papertrack import __version__

    spec = yaml.safe_load((REPO / "bentofile.yaml").read_text())
    assert spec["service"] == "papertrack.serving.http.service:PaperTrack"
    assert spec["python"]["wheels"] == [f"dist/papertrack-{__version__}-py3-none-any.whl"]
    assert spec["python"]["lock_packages"] is False
    assert all(not pattern.startswith(("papertrack", "serving", "*")) for pattern in spec["include"])


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


# --------------------------------------------------------------------------- hostile but fair clients (issue 13)


def test_post_without_content_type_is_415(client):
    response = client.post(
        "/predict", content=json.dumps({"abstract": ABSTRACTS[0]}).encode(), headers={"Content-Type": ""}
    )
    assert response.status_code == 415 and "Content-Type" in response.json()["error"]


def test_only_allowed_hosts_and_same_origin_browser_calls(client):
    body = {"abstract": ABSTRACTS[0]}
    rebound = client.post("/predict", json=body, headers={"Host": "evil.example:3000"})
    assert rebound.status_code == 421 and "PAPERTRACK_ALLOWED_HOSTS" in rebound.json()["error"]
    assert client.get("/metadata", headers={"Host": "attacker.test"}).status_code == 421
    cross = client.post("/predict", json=body, headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403 and "cross-origin" in cross.json()["error"]
    assert client.post("/predict", json=body, headers={"Origin": "null"}).status_code == 403
    same = client.post("/predict", json=body, headers={"Origin": "http://127.0.0.1:3000"})  # the service's own page
    assert same.status_code == 200
    assert client.post("/predict", json=body, headers={"Host": "localhost:3000"}).status_code == 200


def test_allowed_hosts_setting():
    import asyncio

    from papertrack.serving.http.middleware import OriginGuard

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def status(guard, host):
        sent = []

        async def send(message):
            sent.append(message)

        asyncio.run(guard({"type": "http", "path": "/", "method": "GET", "headers": [(b"host", host)]}, None, send))
        return sent[0]["status"]

    assert status(OriginGuard(app, ["papers.lan"]), b"papers.lan:3000") == 200
    assert status(OriginGuard(app, ["papers.lan"]), b"other.lan") == 421
    assert status(OriginGuard(app, ["*"]), b"other.lan") == 200
    assert status(OriginGuard(app, []), b"[::1]:3000") == 200


@pytest.mark.parametrize("abstract", ["\u0000", "\u200b\u200b\u200b", "\U0001f600\U0001f680", "?!"])
def test_content_free_abstracts_are_400(client, abstract):
    response = client.post("/predict", json={"abstract": abstract})
    assert response.status_code == 400 and "no letters or digits" in response.json()["error"]
    response = client.post("/predict_batch", json={"papers": [{"abstract": ABSTRACTS[0]}, {"abstract": abstract}]})
    assert response.status_code == 200  # one bad paper, one error in its place
    assert "papers[1].abstract: abstract has no letters or digits" in response.json()["results"][1]["error"]["error"]


ENCODING_BODIES = [
    ("BOM", b'\xef\xbb\xbf{"abstract": "We study graphs."}', "byte order mark"),
    ("latin-1", b'{"abstract": "Caf\xe9 graphs and kernels."}', "byte 0xe9 at offset 17 is not UTF-8"),
    ("lone surrogate", b'{"abstract": "graphs \\ud800 and kernels"}', "lone UTF-16 surrogate"),
]


@pytest.mark.parametrize("name,data,message", ENCODING_BODIES, ids=[c[0] for c in ENCODING_BODIES])
def test_encoding_problems_say_what_to_fix(client, name, data, message):
    response = client.post("/predict", content=data, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()
    assert message in error["error"] and isinstance(error["detail"], list) and error["detail"]


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


def test_served_model_stores_no_request_embeddings_on_disk(monkeypatch):
    from papertrack.serving.http.bento_store import service_env

    monkeypatch.delenv(settings.EMBEDDING_CACHE_ENV, raising=False)
    assert service_env("papertrack:v1")[settings.EMBEDDING_CACHE_ENV] == "off"
    monkeypatch.setenv(settings.EMBEDDING_CACHE_ENV, "/tmp/my-cache")  # an explicit choice wins
    assert service_env("papertrack:v1")[settings.EMBEDDING_CACHE_ENV] == "/tmp/my-cache"


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


def test_an_upload_the_client_abandons_is_one_log_line(caplog):
    """A client that leaves mid-body: no traceback (two of 105 lines each before), one INFO line."""
    import asyncio
    import logging

    from fastapi import FastAPI
    from starlette.requests import Request

    from papertrack.serving.http import error_answers
    from papertrack.serving.http.bodies import read_json_body

    messages = [{"type": "http.request", "body": b'{"abstract": "gra', "more_body": True}, {"type": "http.disconnect"}]

    async def receive():
        return messages.pop(0)

    scope = {"type": "http", "path": "/predict", "method": "POST", "headers": [(b"content-type", b"application/json")]}
    with pytest.raises(error_answers.ClientGone):
        asyncio.run(read_json_body(Request(scope, receive)))
    app = FastAPI()
    error_answers.install(app)
    handler = app.exception_handlers[error_answers.ClientGone]
    with caplog.at_level(logging.INFO, logger="bentoml.papertrack"):
        asyncio.run(handler(Request(scope, receive), error_answers.ClientGone()))
    assert [r.getMessage() for r in caplog.records] == ["client left before sending the whole body of POST /predict"]
