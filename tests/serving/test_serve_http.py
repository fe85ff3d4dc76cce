"""End to end over real HTTP: `papertrack serve` (which imports the champion and runs `bentoml serve`) as a
subprocess on a free loopback port; real abstracts; answers equal to the registered pyfunc's; the server is
always stopped by its PID (process group) in the fixture's teardown. Also `papertrack label --url`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import free_port

pytestmark = pytest.mark.slow

PAPERTRACK = str(Path(sys.executable).with_name("papertrack"))


@pytest.fixture(scope="module")
def records(trained):
    with open(trained["data"], encoding="utf-8") as f:
        return [json.loads(line) for line, _ in zip(f, range(40))]


def test_predict_over_http_equals_the_pyfunc(server, trained, records):
    import httpx
    import mlflow
    import pandas as pd

    from papertrack import store as mlstore

    with mlstore.using(trained["store"]):
        pyfunc = mlflow.pyfunc.load_model(trained["model_uri"])
    with httpx.Client(base_url=server["url"], timeout=30) as client:
        for record in records[:8]:
            body = client.post("/predict", json={"abstract": record["abstract"], "title": None, "top_k": 3}).json()
            assert set(body) == {"tracks", "areas", "prediction_set", "confident", "taxonomy", "model"}
            assert len(body["tracks"]) == 3
            assert body["model"]["name"] == "papertrack"
            assert body["model"]["run_id"] == trained["result"].winner.run_id
            expected = pyfunc.predict(pd.DataFrame({"abstract": [record["abstract"]]}), params={"top_k": 3}).iloc[0]
            assert body["tracks"] == list(expected["tracks"])
            assert body["areas"] == list(expected["areas"])
            assert body["prediction_set"] == list(expected["prediction_set"])


def test_batch_metadata_and_system_endpoints_over_http(server, trained, records):
    import httpx

    url = server["url"]
    papers = [{"abstract": r["abstract"], "title": r.get("title")} for r in records[:20]]
    response = httpx.post(f"{url}/predict_batch", json={"papers": papers, "top_k": 4}, timeout=30)
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == 20 and all(len(r["tracks"]) == 4 for r in results)
    single = httpx.post(f"{url}/predict", json={**papers[7], "top_k": 4}, timeout=30).json()
    single.pop("model")
    assert results[7] == single

    meta = httpx.get(f"{url}/metadata", timeout=10).json()
    assert meta["data_digest"] == trained["result"].data_digest
    assert meta["n_labels"] == len(meta["labels"]) and meta["hierarchy"]

    for path in ("/healthz", "/readyz", "/livez"):
        assert httpx.get(url + path, timeout=10).status_code == 200
    metrics = httpx.get(f"{url}/metrics", timeout=10)
    assert metrics.status_code == 200 and "bentoml_service_request" in metrics.text
    assert "/predict" in httpx.get(f"{url}/docs.json", timeout=10).json()["paths"]


def test_bad_requests_over_http_are_4xx(server):
    import httpx

    url = server["url"]
    cases = [
        (dict(json={"abstract": "   "}), 400),
        (dict(json={"abstract": "ok", "top_k": 10_000}), 400),
        (dict(content=b"{not json", headers={"Content-Type": "application/json"}), 400),
        (dict(content=b"abstract=x", headers={"Content-Type": "application/x-www-form-urlencoded"}), 415),
        (dict(json={"abstract": "y" * 20_001}), 400),
    ]
    for kwargs, status in cases:
        response = httpx.post(f"{url}/predict", timeout=10, **kwargs)
        assert response.status_code == status, response.text
        assert response.json()["error"]
    big = {"papers": [{"abstract": "ok"}] * 1001}
    assert httpx.post(f"{url}/predict_batch", json=big, timeout=30).status_code == 400
    # the server keeps answering after bad requests, and logged no traceback for them
    assert httpx.post(f"{url}/predict", json={"abstract": "graph neural networks"}, timeout=10).status_code == 200
    assert "Traceback" not in server["log"].read_text()


def test_label_through_the_service_equals_local_labeling(server, server_env, trained, tmp_path):
    dump = tmp_path / "dump.jsonl"
    lines = Path(trained["data"]).read_text(encoding="utf-8").splitlines()[:120]
    lines.insert(5, '{"abstract": ""}')
    lines.insert(9, "{broken json")
    lines.insert(12, json.dumps({"id": "too-long", "abstract": "graph " * 4000}))  # over the 20,000-char limit
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outputs = {}
    for mode, extra in (("http", ["--url", server["url"]]), ("local", [])):
        out = tmp_path / f"{mode}.jsonl"
        result = subprocess.run(
            [PAPERTRACK, "label", str(dump), "-o", str(out), "--no-progress", "--chunk-size", "50", *extra],
            env=server_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 3, result.stdout + result.stderr  # 3: the over-long record is an error row
        assert "123 input records = 120 labeled rows" in " ".join(result.stdout.split())
        outputs[mode] = (out.read_bytes(), (tmp_path / f"{mode}.errors.jsonl").read_bytes())
    assert outputs["http"] == outputs["local"]
    # the drift report too: through the service's POST /drift with --url, the same numbers
    reports = {mode: json.loads((tmp_path / f"{mode}.drift.json").read_text(encoding="utf-8")) for mode in outputs}
    for key in ("records", "label_js", "area_js", "unsure_share", "oov_share", "labels_moved_most", "given_labels"):
        assert reports["http"][key] == reports["local"][key], key
    assert reports["http"]["papers"] == 120 and reports["http"]["errors"] == []


def test_bentoml_serve_without_the_model_fails_fast(server_env, tmp_path):
    env = {**server_env, "BENTOML_HOME": str(tmp_path / "empty-bentoml")}
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bentoml",
            "serve",
            "papertrack.serving.http.service:PaperTrack",
            "--host",
            "127.0.0.1",
            "--port",
            str(free_port()),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
    )
    assert result.returncode != 0
    assert "papertrack train" in result.stdout + result.stderr
    assert time.monotonic() - started < 60
