"""A team MLflow server on PostgreSQL: a throwaway PostgreSQL 15 cluster (initdb/pg_ctl as user postgres on a
free port), `papertrack tracking-server` against it, then `train`, `runs`, the registry alias, `serve` + one
POST and `label`, all through the server; two concurrent trains give exactly one champion; a database that
is down, or a server that is not there, is one clear line. Everything is stopped by PID, temp dirs removed."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import FAST_CANDIDATES, stratified_subset
from tests.processes import free_port, stop, wait_http

PG_BIN = Path(os.environ.get("PAPERTRACK_PG_BIN", "/usr/lib/postgresql/15/bin"))
INSTALL = "apt-get install -y postgresql (PostgreSQL 15 server binaries in /usr/lib/postgresql/15/bin)"
PAPERTRACK = str(Path(sys.executable).with_name("papertrack"))

pytestmark = pytest.mark.slow
pytest.importorskip("psycopg", reason="pip install -e '.[team]' (psycopg[binary]) for the team server tests")
if not (PG_BIN / "initdb").exists() or not (PG_BIN / "pg_ctl").exists():
    pytest.skip(f"PostgreSQL server binaries not found in {PG_BIN}: {INSTALL}", allow_module_level=True)
try:
    POSTGRES = pwd.getpwnam("postgres")
except KeyError:
    pytest.skip(f"no 'postgres' user: {INSTALL}", allow_module_level=True)
if os.geteuid() not in (0, POSTGRES.pw_uid):
    pytest.skip(
        "initdb/pg_ctl must run as user postgres: run the tests as root or as postgres", allow_module_level=True
    )


def as_postgres(*command: str, **kwargs) -> subprocess.CompletedProcess:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120, **kwargs)


def start_postgres(data: Path, root: Path, port: int) -> subprocess.CompletedProcess:
    """pg_ctl start of the cluster in ``data`` on the loopback ``port`` (its socket and log in ``root``)."""
    return as_postgres(
        str(PG_BIN / "pg_ctl"),
        "-D",
        str(data),
        "-l",
        str(root / "server.log"),
        "-w",
        "-t",
        "60",
        "-o",
        f"-k {root} -p {port} -c listen_addresses=127.0.0.1",
        "start",
    )


@pytest.fixture(scope="module")
def postgres():
    """initdb into a temp dir owned by postgres, pg_ctl start on a free loopback port, createdb mlflow."""
    root = Path(tempfile.mkdtemp(prefix="papertrack-pg-"))
    os.chown(root, POSTGRES.pw_uid, POSTGRES.pw_gid)
    data, port = root / "data", free_port()
    init = as_postgres(
        str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"
    )
    assert init.returncode == 0, init.stderr
    start = start_postgres(data, root, port)
    try:
        assert start.returncode == 0, start.stdout + start.stderr + (root / "server.log").read_text()
        created = as_postgres(str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "mlflow")
        assert created.returncode == 0, created.stderr
        yield {"uri": f"postgresql://postgres@127.0.0.1:{port}/mlflow", "data": data, "port": port, "root": root}
    finally:
        # pg_ctl stops the postmaster by the PID in its pid file
        as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def server(postgres, tmp_path_factory):
    folder = tmp_path_factory.mktemp("team-server")
    port, log = free_port(), folder / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                PAPERTRACK,
                "tracking-server",
                "--backend-store-uri",
                postgres["uri"],
                "--artifacts",
                str(folder / "artifacts"),
                "--port",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/health", proc, log)
        yield {"url": url, "proc": proc, "artifacts": folder / "artifacts", "log": log}
    finally:
        stop(proc)
    assert proc.poll() is not None


@pytest.fixture(scope="module")
def client_env(server, tmp_path_factory):
    home = tmp_path_factory.mktemp("team-client")
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": server["url"],
        "PAPERTRACK_HOME": str(home / "papertrack"),
        "BENTOML_HOME": str(home / "bentoml"),
        "PAPERTRACK_EMBEDDING_CACHE": "off",
    }
    env.pop("PAPERTRACK_BENTO_MODEL", None)
    return env


def papertrack(env: dict, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([PAPERTRACK, *args], env=env, capture_output=True, text=True, timeout=timeout)


def train_args(data: Path) -> list[str]:
    return [
        "train",
        "--data",
        str(data),
        *[a for c in FAST_CANDIDATES for a in ("-c", c)],
        "--folds",
        "3",
        "--seed",
        "7",
    ]


@pytest.fixture(scope="module")
def first_train(client_env, subset_path):
    # --plots top2 (the suite's default is none): the plots test below reads the champion's plots
    result = papertrack(client_env, *train_args(subset_path), "--plots", "top2")
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_train_runs_alias_and_artifacts_through_the_server(first_train, client_env, server):
    from mlflow.tracking import MlflowClient

    assert "Registered papertrack version 1 as champion" in " ".join(first_train.stdout.split())
    runs = papertrack(client_env, "runs")
    assert runs.returncode == 0, runs.stdout + runs.stderr
    assert server["url"] in runs.stdout and all(c in runs.stdout for c in FAST_CANDIDATES)

    client = MlflowClient(tracking_uri=server["url"], registry_uri=server["url"])
    assert client.get_model_version("papertrack", "1").tags["candidate"] in FAST_CANDIDATES  # the first train's
    # the champion now: version 1, or a later one when the concurrent-trains test ran first (any test order)
    champion = client.get_model_version_by_alias("papertrack", "champion")
    assert champion.tags["candidate"] in FAST_CANDIDATES
    candidate_runs = client.search_runs(
        [client.get_experiment_by_name("papertrack").experiment_id], filter_string="tags.candidate != ''"
    )
    assert {r.data.tags["candidate"] for r in candidate_runs} >= set(FAST_CANDIDATES)
    assert all("cv_label_top3" in r.data.metrics for r in candidate_runs)
    # plots are proxied: uploaded through the server into its --artifacts folder, downloadable through it
    # the first train's winner (version 1): it drew its plots; a concurrent test's trains draw none
    winner_run_id = client.get_model_version("papertrack", "1").run_id
    plots = {Path(a.path).name for a in client.list_artifacts(winner_run_id, "plots")}
    assert "confusion_area.png" in plots
    local = client.download_artifacts(winner_run_id, "plots/confusion_area.png")
    assert Path(local).read_bytes().startswith(b"\x89PNG")
    assert any(p.name == "confusion_area.png" for p in server["artifacts"].rglob("*.png"))


def test_serve_and_label_pull_the_champion_from_the_server(first_train, client_env, server, subset_path, tmp_path):
    import httpx
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=server["url"], registry_uri=server["url"])
    champion = client.get_model_version_by_alias("papertrack", "champion").version  # 1 unless another test trained

    lines = subset_path.read_text(encoding="utf-8").splitlines()[:20]
    (tmp_path / "dump.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    labeled = papertrack(
        client_env, "label", str(tmp_path / "dump.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--no-progress"
    )
    assert labeled.returncode == 0, labeled.stdout + labeled.stderr
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 20

    port, log = free_port(), tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [PAPERTRACK, "serve", "--port", str(port), "--workers", "1"],
            env=client_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz", proc, log)
        abstract = json.loads(lines[0])["abstract"]
        response = httpx.post(f"http://127.0.0.1:{port}/predict", json={"abstract": abstract, "top_k": 3}, timeout=60)
        assert response.status_code == 200, response.text
        body = response.json()
        assert len(body["tracks"]) == 3 and body["model"]["version"] == champion
        first = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
        assert [t["label"] for t in body["tracks"]] == [t["label"] for t in first["tracks"]]
    finally:
        stop(proc)
    assert proc.poll() is not None


def test_two_concurrent_trains_give_exactly_one_champion(first_train, client_env, server, data_dir, tmp_path):
    """Both register at about the same time on new data (so the first to be decided is promoted on a data
    change): decided in version order, the lower version is champion, the other challenger."""
    from mlflow.tracking import MlflowClient

    data = stratified_subset(data_dir / "iclr2024_topics.jsonl", tmp_path / "other.jsonl", 9)
    procs = [
        subprocess.Popen(
            [PAPERTRACK, *train_args(data)], env=client_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=1200)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n\n".join(outputs)
    client = MlflowClient(tracking_uri=server["url"], registry_uri=server["url"])
    versions = sorted(
        (v for v in client.search_model_versions("name='papertrack'") if v.version != "1"), key=lambda v: int(v.version)
    )
    assert len(versions) == 2
    by_alias = {
        "champion": client.get_model_version_by_alias("papertrack", "champion").version,
        "challenger": client.get_model_version_by_alias("papertrack", "challenger").version,
    }
    assert by_alias == {"champion": versions[0].version, "challenger": versions[1].version}
    assert "training data changed" in versions[0].tags["gate"]
    assert (
        "does not beat the champion" in versions[1].tags["gate"]
        and f"v{versions[0].version}" in versions[1].tags["gate"]
    )
    said = sorted(" ".join(o.split()) for o in outputs)
    assert sum("as champion" in s for s in said) == 1 and sum("as challenger" in s for s in said) == 1
    # both runs landed
    parents = client.search_runs(
        [client.get_experiment_by_name("papertrack").experiment_id], filter_string="tags.registered_version != ''"
    )
    assert {r.data.tags["registered_version"] for r in parents} >= {v.version for v in versions}


def test_unreachable_server_or_database_is_one_clear_line(server, postgres, client_env, tmp_path):
    # no server at that address
    nobody = {**client_env, "MLFLOW_TRACKING_URI": f"http://127.0.0.1:{free_port()}"}
    result = papertrack(nobody, "runs", timeout=120)
    assert result.returncode == 2
    assert "cannot reach the tracking server at http://127.0.0.1:" in " ".join(result.stderr.split())
    # tracking-server refuses a database that does not answer
    dead = f"postgresql://postgres@127.0.0.1:{free_port()}/mlflow"
    result = papertrack(
        client_env,
        "tracking-server",
        "--backend-store-uri",
        dead,
        "--artifacts",
        str(tmp_path / "a"),
        "--port",
        str(free_port()),
        timeout=120,
    )
    assert result.returncode == 2 and "cannot reach the database at" in " ".join(result.stderr.split())
    # the server is up but its database goes down; started again after (the module's other tests use it)
    stopped = as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(postgres["data"]), "-m", "fast", "-w", "stop")
    assert stopped.returncode == 0, stopped.stderr
    try:
        started = time.monotonic()
        (tmp_path / "x.jsonl").write_text('{"abstract": "graph neural networks"}\n')  # arguments are checked first
        for command in (["runs"], ["label", str(tmp_path / "x.jsonl"), "-o", str(tmp_path / "y.jsonl")]):
            result = papertrack(client_env, *command, timeout=300)
            text = " ".join(result.stderr.split())
            assert result.returncode == 2, result.stdout + result.stderr
            assert f"error: cannot reach the tracking server at {server['url']}" in text, text
            assert "Traceback" not in result.stderr
        assert time.monotonic() - started < 240  # no minutes of retries
    finally:
        restarted = start_postgres(postgres["data"], postgres["root"], postgres["port"])
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
