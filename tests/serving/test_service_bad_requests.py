"""In-process tests of the BentoML service class: every bad request gets the right 4xx with an error that says
what to fix (missing or invalid fields, malformed bodies, content types, wrong methods and paths, hosts and
origins that are not allowed, abstracts without letters or digits, bodies that are not UTF-8).

Requests go through the real ASGI app of the service (conftest's ``client``: the session's champion imported into
a temporary BentoML home) with Starlette's TestClient.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.serving.abstracts import ABSTRACTS

os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


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


# --------------------------------------------------------------------------- hostile but fair clients


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
