"""Hostile and odd HTTP input (issue 19) and `papertrack serve` on a busy port (issue 20): every answer is a JSON
error with the service's shape, never a 500 or a traceback; the pages carry browser-safety headers.

In-process through the service's real ASGI app (conftest's ``client`` fixture); the busy-port test
runs the CLI as a subprocess against a socket this test holds (closed at the end)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.serving.abstracts import ABSTRACTS

PAPERTRACK = str(Path(sys.executable).with_name("papertrack"))


def assert_error_shape(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error", "detail"} and isinstance(body["error"], str) and body["error"]
    assert isinstance(body["detail"], list)
    return body


# --------------------------------------------------------------------------- POST /parse_dump


@pytest.mark.parametrize("filename", ["..", "...", "../..", "a/..", "..%2F.."])
def test_parse_dump_with_a_name_that_is_no_file_is_400(client, filename):
    response = client.post(f"/parse_dump?filename={filename}", content=b'{"abstract": "graph neural networks"}\n')
    body = assert_error_shape(response, 400)
    assert "file name" in body["error"]


LONE_SURROGATES = [
    ("jsonl abstract", "dump.jsonl", b'{"abstract": "graph neural networks \\udc00 on molecules"}\n'),
    ("jsonl only a surrogate", "dump.jsonl", b'{"abstract": "\\udc00"}\n'),
    ("jsonl title", "dump.jsonl", b'{"abstract": "graph neural networks", "title": "\\ud800"}\n'),
    ("json array", "dump.json", b'[{"abstract": "graph neural networks \\udc00"}]'),
    ("gzipped jsonl", "dump.jsonl.gz", None),
]


@pytest.mark.parametrize("name,filename,data", LONE_SURROGATES, ids=[c[0] for c in LONE_SURROGATES])
def test_parse_dump_never_500s_on_a_lone_surrogate(client, name, filename, data):
    if data is None:
        import gzip

        data = gzip.compress(b'{"abstract": "ok"}\n{"abstract": "graph neural networks \\udc00"}\n')
    response = client.post(f"/parse_dump?filename={filename}", content=data)
    assert response.status_code in (200, 400), response.text
    assert response.headers["content-type"] == "application/json"
    if response.status_code == 400:
        assert "surrogate" in assert_error_shape(response, 400)["error"]
    else:  # the record skipped as an error row: the answer is strict UTF-8 JSON without a lone surrogate
        body = json.loads(response.content.decode("utf-8"))
        assert body["errors"] and "surrogate" in json.dumps(body["errors"])
        strings = json.dumps(body, ensure_ascii=False)  # (the reason may *name* the escape, as text)
        assert not any(0xD800 <= ord(ch) <= 0xDFFF for ch in strings)


def test_parse_dump_surrogate_message_names_the_line(client):
    data = b'{"abstract": "graph neural networks"}\n{"abstract": "kernels \\udc00 and more"}\n'
    response = client.post("/parse_dump?filename=papers.jsonl", content=data)
    if response.status_code == 400:
        assert assert_error_shape(response, 400)["error"].startswith("papers.jsonl:2: \\udc00")


def test_parse_dump_answer_over_the_cap_is_413_saying_to_use_label(client, monkeypatch):
    """A 684 kB gzip answered 101.6 MB of JSON (hostile input, round three): the answer is capped."""
    from papertrack.serving.http import page

    monkeypatch.setattr(page, "MAX_DUMP_ANSWER_CHARS", 5_000)
    data = b"".join(json.dumps({"abstract": f"{ABSTRACTS[0]} {i}"}).encode() + b"\n" for i in range(100))
    response = client.post("/parse_dump?filename=many.jsonl", content=data)
    body = assert_error_shape(response, 413)
    assert body["error"].startswith("many.jsonl: the answer would hold more than ")
    assert "`papertrack label many.jsonl -o labeled.csv`" in body["error"]
    monkeypatch.setattr(page, "MAX_DUMP_ANSWER_CHARS", 1 << 20)
    assert len(client.post("/parse_dump?filename=many.jsonl", content=data).json()["papers"]) == 100


def test_parse_dump_names_the_command_that_takes_a_column_option(client):
    """The page has no command-line options: a spreadsheet's or a misspelt field's fix names `papertrack label`."""
    sheet = client.post("/parse_dump?filename=papers.xlsx", content=b"PK\x03\x04\x14\x00\x06\x00xl/workbook.xml")
    error = assert_error_shape(sheet, 400)["error"]
    assert error.startswith("papers.xlsx: a spreadsheet (Excel/ODS), not text: export the sheet as CSV (UTF-8)")
    assert error.endswith("or name their column with `papertrack label --abstract-column`)")
    typo = client.post("/parse_dump?filename=papers.jsonl", content=b'{"id": "1", "abstarct": "graph networks"}\n')
    (error_row,) = typo.json()["errors"]  # the record is an error row of the answer
    assert error_row["reason"].endswith(
        'did you mean "abstarct"? name it with `papertrack label --abstract-column abstarct`'
    )


# --------------------------------------------------------------------------- where the work runs (round three)


def where_it_ran(monkeypatch, name: str) -> list[bool]:
    """For each call of PaperTrack's method ``name`` from now on: whether it ran with an event loop running in
    its thread (the loop that reads requests and answers /healthz)."""
    import asyncio

    from papertrack.serving.http.service import PaperTrack

    seen: list[bool] = []
    original = getattr(PaperTrack.inner, name)  # the class (PaperTrack is BentoML's Service around it)

    def in_loop() -> bool:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return True

    def spy(self, *args, **kwargs):
        seen.append(in_loop())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PaperTrack.inner, name, spy)
    return seen


@pytest.mark.parametrize(
    "path,body",
    [
        ("/predict", {"abstract": ABSTRACTS[0]}),
        ("/predict_batch", {"papers": [{"abstract": ABSTRACTS[0]}]}),
        ("/explain", {"abstract": ABSTRACTS[0], "terms": 11}),
        ("/drift", {"papers": [{"abstract": ABSTRACTS[0]}]}),
    ],
)
def test_validation_and_prediction_run_off_the_event_loop(client, monkeypatch, path, body):
    """Whatever a request costs (a 19,990 × U+FDFA abstract expands 18× in NFKD), it is validated and answered in
    the worker's thread pool (``_respond`` runs each endpoint's work: validate, predict, write the answer): the
    event loop keeps answering /healthz. No per-request cost model decides it."""
    seen = where_it_ran(monkeypatch, "_respond")
    response = client.post(path, json=body)
    assert response.status_code in (200, 409), response.text
    assert seen == [False]


def test_an_abstract_that_expands_in_normalisation_is_answered(client):
    response = client.post("/predict", json={"abstract": "\ufdfa" * 19_990})
    assert response.status_code == 200, response.text


def test_explain_terms_times_tracks_is_bounded(client):
    """top_k × terms ≤ MAX_EXPLAINED_TERMS: /explain's top_k is at most MAX_EXPLAINED_TERMS // MAX_TERMS (20), so
    every request the schema allows is within it; over that, a 400 naming the field."""
    from papertrack.serving.http.explain_api import MAX_EXPLAIN_TOP_K, MAX_EXPLAINED_TERMS, MAX_TERMS

    assert MAX_EXPLAIN_TOP_K * MAX_TERMS <= MAX_EXPLAINED_TERMS
    response = client.post("/explain", json={"abstract": ABSTRACTS[0], "top_k": MAX_EXPLAIN_TOP_K + 1, "terms": 50})
    body = assert_error_shape(response, 400)
    assert f"top_k: Input should be less than or equal to {MAX_EXPLAIN_TOP_K}" in body["error"]
    assert client.post("/explain", json={"abstract": ABSTRACTS[0], "top_k": 2, "terms": 50}).status_code == 200


def test_explanation_spans_are_bounded_per_term(client):
    from papertrack.serving.http.explain_api import MAX_SPANS

    abstract = " ".join([ABSTRACTS[0]] * 104)  # every word (and pair) 103 times or more: 19,863 characters
    response = client.post("/explain", json={"abstract": abstract, "top_k": 1, "terms": 5})
    assert response.status_code == 200, response.text
    answer = response.json()
    spans = [len(term["spans"]) for track in answer["explanations"] for term in track["terms"]]
    assert spans and set(spans) == {MAX_SPANS}, spans


# --------------------------------------------------------------------------- 404 / 405


@pytest.mark.parametrize(
    "method,path,status",
    [
        ("GET", "/nowhere", 404),
        ("GET", "/docs.json/x", 404),
        ("GET", "/page/nope.css", 404),
        ("GET", "/predict", 405),
        ("PUT", "/predict", 405),
        ("POST", "/metadata", 405),
        ("GET", "/parse_dump", 405),
        ("DELETE", "/", 405),
        ("POST", "/docs.json", 405),
    ],
)
def test_unknown_paths_and_wrong_methods_answer_json_errors(client, method, path, status):
    response = client.request(method, path)
    body = assert_error_shape(response, status)
    assert path in body["error"]
    if status == 405:
        assert response.headers["allow"] and response.headers["allow"] in body["error"]


def test_every_path_of_the_spec_is_a_known_path(client):
    from papertrack.serving.http.service import PATHS

    assert set(client.get("/docs.json").json()["paths"]) <= PATHS


# --------------------------------------------------------------------------- Host


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:1@evil.com",
        "localhost:3000@evil.com",
        "127.0.0.1 evil.com",
        "127.0.0.1:3000/evil",
        "127.0.0.1:3000#evil.com",
        "evil.com\\@127.0.0.1",
    ],
)
def test_a_host_header_that_is_no_host_is_refused(client, host):
    for response in (
        client.get("/metadata", headers={"Host": host}),
        client.post("/predict", json={"abstract": ABSTRACTS[0]}, headers={"Host": host}),
    ):
        assert response.status_code in (400, 421), response.text
        assert_error_shape(response, response.status_code)
    assert client.get("/metadata", headers={"Host": "127.0.0.1:3000"}).status_code == 200
    assert client.get("/metadata", headers={"Host": "[::1]:3000"}).status_code == 200


# --------------------------------------------------------------------------- browser-safety headers


@pytest.mark.parametrize("path", ["/", "/docs"])
def test_the_pages_forbid_framing_sniffing_and_other_origins(client, path):
    response = client.get(path)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    policy = {
        part.split()[0]: part.split()[1:]
        for part in response.headers["content-security-policy"].split(";")
        if part.strip()
    }
    assert policy["default-src"] == ["'self'"] and policy["script-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert not any(
        "unsafe" in source or source == "*" or source.startswith("http")
        for sources in policy.values()
        for source in sources
    )
    # no inline script the policy would block: every <script> has a same-origin src and no body
    import re

    for attributes, code in re.findall(r"<script([^>]*)>(.*?)</script>", response.text, re.S):
        assert re.search(r'src="/[^/]', attributes) and not code.strip(), attributes


def test_json_answers_keep_their_headers(client):
    response = client.post("/predict", json={"abstract": ABSTRACTS[0]})
    assert response.status_code == 200 and "content-security-policy" not in response.headers


# --------------------------------------------------------------------------- papertrack serve on a busy port


@pytest.mark.slow  # runs `papertrack serve`
def test_serve_on_a_busy_port_is_one_error_line_suggesting_a_free_port(tmp_path):
    """The port suggested is free (the next one is busy too here), not just the next number."""
    import re

    env = {**os.environ, "PAPERTRACK_HOME": str(tmp_path / "home"), "BENTOML_HOME": str(tmp_path / "bentoml")}
    with socket.socket() as busy, socket.socket() as next_one:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        try:
            next_one.bind(("127.0.0.1", port + 1))
            next_one.listen()
        except OSError:
            pass  # busy already
        result = subprocess.run(
            [PAPERTRACK, "serve", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            start_new_session=True,
        )
        suggested = re.search(r"--port (\d+), free now", result.stderr)
        assert suggested and int(suggested.group(1)) > port + 1, result.stderr
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", int(suggested.group(1))))  # free indeed
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Serving" not in result.stdout and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: port {port} on 127.0.0.1 is in use; pass --port"), lines


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "::"])
def test_serve_on_another_interface_says_to_put_the_proxy_in_front_first(host, tmp_path, monkeypatch):
    """Binding anything but loopback is refused before anything else happens (no store is opened, no port
    probed): the service leaves slow clients, body sizes and buffering to the reverse proxy."""
    from typer.testing import CliRunner

    from papertrack.cli import app

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "no-store"))
    result = CliRunner().invoke(app, ["serve", "--host", host])
    assert result.exit_code == 2, result.output
    assert "deploy/nginx.conf" in result.output and "--behind-proxy" in result.output
    assert not (tmp_path / "no-store").exists()
