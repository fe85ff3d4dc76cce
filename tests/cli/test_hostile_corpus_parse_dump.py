"""The hostile-input corpus (``tests/hostile_corpus.py``) against ``POST /parse_dump``, each case with a memory
ceiling and a time ceiling: the status, and the error rows or the message, the page's reader must answer with.

``/parse_dump`` runs in a real ``papertrack serve`` worker whose peak (VmHWM) is reset before each case
(``/proc/<pid>/clear_refs``), so each case's peak is its own. The model is the session's ``trained`` champion
(conftest), so this module is slow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.hostile_cases import GROWTH_MIB, LINEAR_SECONDS, SECONDS, SLOW_SECONDS, SPREAD_9, file_lines
from tests.processes import free_port, stop, wait_http

pytestmark = pytest.mark.slow


# `POST /parse_dump` (the server's own 100 MiB decompressed limit): status, and error rows or the message
PARSE_DUMP = {
    "bomb-one-line.jsonl.gz": (200, [(3, "too-long")]),
    # 160 MiB of records: the answer's cap (32 Mi characters of text) comes before the 100 MiB one
    "bomb-many-lines.jsonl.gz": (413, "the answer would hold more than 32 Mi characters of text"),
    "utf16-bom.jsonl": (400, "UTF-16 text, not UTF-8"),
    "utf16-no-bom.txt": (400, "UTF-16 text, not UTF-8"),
    "wide-abstract.jsonl": (200, [(2, "too-long")]),
    "wide-title.jsonl": (200, [(2, "too-long")]),
    "spread-records.json": (200, [(SPREAD_9, "too-long")]),
    "csv-injection.csv": (200, []),
    "many-labels.jsonl": (200, []),
    "nul-bytes.jsonl": (200, [(2, "invalid"), (4, "empty")]),
    "invalid-json.jsonl": (200, [(line, "invalid") for line in range(2, 9)]),
    "long-paragraph.txt": (200, [(1, "header"), (5, "too-long")]),
    "open-quote.csv": (400, "open-quote.csv:3: the record starting here is over 1,048,576 characters"),
    "one-object.json": (400, "one-object.json:1: expected a JSON array of records"),
    "empty.jsonl": (400, "empty.jsonl"),
    "spaces-authors.txt": (200, []),
    "long-record.txt.gz": (200, [(7, "too-long")]),
    "zeros.txt": (400, "zeros.txt: its first 4,096 bytes are all zero"),
}


def status_mib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith(field + ":"))


@pytest.fixture(scope="module")
def server(trained, tmp_path_factory):
    """`papertrack serve` with one worker; yields (url, the worker's pid)."""
    import psutil

    port = free_port()
    home = tmp_path_factory.mktemp("hostile-bentoml")
    env = {**os.environ, "BENTOML_HOME": str(home), "PAPERTRACK_HOME": str(trained["home"])}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("PAPERTRACK_BENTO_MODEL", None)
    log = home / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("papertrack")), "serve", "--port", str(port), "--workers", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/readyz", proc, log)
        serving = [
            child
            for child in psutil.Process(proc.pid).children(recursive=True)
            if "_bentoml_impl.worker.service" in " ".join(child.cmdline())
        ]
        # a worker's explanation process is forked from it (same command line): not a worker
        workers = [child.pid for child in serving if child.ppid() not in {c.pid for c in serving}]
        assert len(workers) == 1, workers
        yield url, workers[0]
    finally:
        stop(proc)


@pytest.mark.parametrize("case", list(PARSE_DUMP))
def test_parse_dump(server, corpus, case):
    import time

    import httpx

    url, worker = server
    with open(f"/proc/{worker}/clear_refs", "w") as clear:
        clear.write("5")  # the worker's peak from here on
    before = status_mib(worker, "VmRSS")
    started = time.monotonic()
    response = httpx.post(
        f"{url}/parse_dump", params={"filename": case}, content=(corpus / case).read_bytes(), timeout=300
    )
    seconds = time.monotonic() - started
    growth = status_mib(worker, "VmHWM") - before
    assert growth <= GROWTH_MIB + 50, f"{case}: the worker grew by {growth} MiB"  # + the answer's JSON
    assert seconds <= (LINEAR_SECONDS if case == "spread-records.json" else SLOW_SECONDS.get(case, SECONDS))
    status, expected = PARSE_DUMP[case]
    assert response.status_code == status, response.text[:2000]
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    if status in (400, 413):
        assert set(body) == {"error", "detail"} and expected in body["error"], body
        return
    assert [(row["line"], row["kind"]) for row in body["errors"]] == file_lines(expected, corpus / case)
    assert body["papers"] and all(paper["abstract"] for paper in body["papers"])


def test_parse_dump_lone_surrogates_are_answered_not_500(server, corpus):
    import httpx

    url, _ = server
    data = (corpus / "lone-surrogates.jsonl").read_bytes()
    response = httpx.post(f"{url}/parse_dump", params={"filename": "lone-surrogates.jsonl"}, content=data, timeout=60)
    assert response.status_code == 200, response.text[:2000]
    assert [(row["line"], row["kind"]) for row in response.json()["errors"]] == [
        (2, "invalid"),
        (3, "invalid"),
        (4, "invalid"),
    ]
