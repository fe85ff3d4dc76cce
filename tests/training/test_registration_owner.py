"""A version being registered carries its owner (pid, host, start time): a later registration does not wait for a
version whose owner has ended (a `train` killed between registering and setting the alias), says at once what it
waits for when it does wait, and a registration interrupted before its alias tags the version undecided."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from papertrack import registry, store

NAME = "papertrack"


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    """One sqlite store for the module (creating MLflow's schema takes seconds)."""
    return store.open(home=tmp_path_factory.mktemp("registration") / ".papertrack")


@pytest.fixture
def mine(opened):
    """The store with a registered model ``papertrack`` and no versions yet."""
    client = opened.client()
    if client.search_registered_models(f"name='{NAME}'"):
        client.delete_registered_model(NAME)
    client.create_registered_model(NAME)
    return opened


def _version(opened, owner: str | None, gate: str | None = None):
    tags = {registry.OWNER_TAG: owner} if owner else {}
    if gate:
        tags["gate"] = gate
    return opened.client().create_model_version(NAME, source="file:///nowhere", tags=tags)


def _ended_process_owner() -> str:
    """The owner tag a process of this host that has ended would have left."""
    import psutil

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = psutil.Process(child.pid).create_time()
    child.wait()
    return f"{child.pid}@{socket.gethostname()} started {started:.2f}"


def test_the_owner_names_this_process_and_is_alive():
    tag = registry.owner()
    assert tag.startswith(f"{os.getpid()}@{socket.gethostname()} started ")
    assert not registry.owner_gone(tag)


def test_an_ended_or_reused_owner_is_gone_an_unknown_one_is_not():
    assert registry.owner_gone(_ended_process_owner())
    pid, rest = registry.owner().split("@", 1)
    host, started = rest.split(" started ")
    assert registry.owner_gone(f"{pid}@{host} started {float(started) - 3600:.2f}")  # same pid, another process
    assert not registry.owner_gone(f"1@another-host-{os.getpid()} started 1.00")  # another host: cannot tell
    assert not registry.owner_gone(None) and not registry.owner_gone("by hand")


def test_a_version_whose_owner_ended_is_not_waited_for(mine, caplog):
    _version(mine, _ended_process_owner())  # a train killed after registering, before its alias
    later = _version(mine, registry.owner())
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="papertrack.registry"):
        note = registry._wait_for_earlier(mine.client(), NAME, later, timeout=30)
    assert note == "" and time.monotonic() - started < 5
    assert "waiting" not in caplog.text


def test_a_live_owner_is_waited_for_and_named_at_once(mine, caplog):
    _version(mine, registry.owner())  # a registration still being decided (this very process)
    later = _version(mine, registry.owner())
    with caplog.at_level("WARNING", logger="papertrack.registry"):
        note = registry._wait_for_earlier(mine.client(), NAME, later, timeout=1.0, poll=0.2)
    assert note == "decided without waiting longer for undecided version(s) 1"
    assert f"waiting (at most 1 s) for version(s) 1, being registered by {os.getpid()}@" in caplog.text


def test_an_interrupted_registration_tags_its_version_undecided(mine, monkeypatch):
    monkeypatch.setattr(registry, "_wait_for_earlier", lambda *a, **k: "")

    def interrupted(champion):
        raise KeyboardInterrupt

    with store.using(mine):
        import mlflow

        with mlflow.start_run(experiment_id=mine.experiment().experiment_id) as run:
            mlflow.log_text("x", "model/MLmodel")
        uri = f"runs:/{run.info.run_id}/model"
    monkeypatch.setattr("mlflow.register_model", _register_without_model(mine))
    with pytest.raises(KeyboardInterrupt):
        registry.register(mine, uri, run.info.run_id, {}, "digest", "cand", interrupted)
    (version,) = mine.client().search_model_versions(f"name='{NAME}'")
    assert version.tags["gate"] == "undecided: KeyboardInterrupt before its alias"
    assert version.tags[registry.OWNER_TAG] == registry.owner()


def _register_without_model(opened):
    """mlflow.register_model for a run without a logged model: a version from its source, with the tags given."""

    def register(model_uri, name, tags=None, **_):
        return opened.client().create_model_version(name, source=model_uri, tags=tags)

    return register
