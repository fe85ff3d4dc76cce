"""The service's configuration: bentofile.yaml matches the package, the served model keeps no request
embeddings on disk, PAPERTRACK_ALLOWED_HOSTS decides which hosts are answered, and `papertrack serve` without a
champion fails fast with a hint."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from papertrack import settings
from papertrack.errors import NoModelError

os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


REPO = Path(__file__).resolve().parents[2]


def test_bentofile_matches_the_package():
    import yaml

    from papertrack import __version__

    spec = yaml.safe_load((REPO / "bentofile.yaml").read_text())
    assert spec["service"] == "papertrack.serving.http.service:PaperTrack"
    assert spec["python"]["wheels"] == [f"dist/papertrack-{__version__}-py3-none-any.whl"]
    assert spec["python"]["lock_packages"] is False
    assert all(not pattern.startswith(("papertrack", "serving", "*")) for pattern in spec["include"])


def test_served_model_stores_no_request_embeddings_on_disk(monkeypatch):
    from papertrack.serving.http.bento_store import service_env

    monkeypatch.delenv(settings.EMBEDDING_CACHE_ENV, raising=False)
    assert service_env("papertrack:v1")[settings.EMBEDDING_CACHE_ENV] == "off"
    monkeypatch.setenv(settings.EMBEDDING_CACHE_ENV, "/tmp/my-cache")  # an explicit choice wins
    assert service_env("papertrack:v1")[settings.EMBEDDING_CACHE_ENV] == "/tmp/my-cache"


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
