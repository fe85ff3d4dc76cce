"""The registry cache: a read command finds the champion's files and digests without MLflow while the store is
unchanged, sees at once a change made through MLflow (the registry stays the source of truth), and checks every
file the same way (a damaged or planted file is refused by name, a planted pickle never runs)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from papertrack import registry_cache
from papertrack.serving.model_loader import load_model
from tests.models.model_artifacts import ABSTRACT, _plant, flat, flip_a_byte, label, register

NOBODY = 65534


def _without_mlflow(monkeypatch) -> None:
    """Any question to the registry or the tracking store fails the test."""
    from papertrack import store
    from papertrack.models import loading

    def asked(*args, **kwargs):
        raise AssertionError("MLflow was asked")

    monkeypatch.setattr(store.Store, "client", asked)
    monkeypatch.setattr(loading, "pin", asked)


def test_a_second_load_finds_the_champion_without_asking_mlflow(registered, monkeypatch):
    first = load_model("champion", registered["store"])
    assert (registered["home"] / registry_cache.CACHE_FILE).is_file()
    _without_mlflow(monkeypatch)
    again = load_model("champion", registered["store"])
    assert again.folder == first.folder == registered["predictor_file"].parent.parent
    assert again.predictor.predict([ABSTRACT]) == first.predictor.predict([ABSTRACT])


def test_a_new_process_labels_from_the_cache_without_importing_mlflow(registered, tmp_path):
    load_model("champion", registered["store"])  # fills the cache
    script = (
        "import sys, papertrack; m = papertrack.load(); "
        f"print(m.predict([{ABSTRACT!r}])[0]['tracks'][0]['label']); print('mlflow' in sys.modules)"
    )
    env = {**os.environ, "PAPERTRACK_HOME": str(registered["home"])}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Deep Learning · Attention Mechanisms", "False"]


def test_an_alias_moved_through_mlflow_is_seen_at_once(registered, predictor, tmp_path, monkeypatch):
    load_model("champion", registered["store"])  # version 1, cached
    (tmp_path / "second").mkdir()
    second = register(predictor, tmp_path / "second", monkeypatch)  # another store: its model becomes version 2
    monkeypatch.setenv("PAPERTRACK_HOME", str(registered["home"]))
    client = registered["store"].client()
    source = second["predictor_file"].parent.parent
    version = client.create_model_version("papertrack", source.as_uri(), tags=_files_tag(second))
    client.set_registered_model_alias("papertrack", "champion", version.version)  # MLflow's own API, not papertrack
    assert registry_cache.lookup(registered["store"], "papertrack", "champion") is None
    moved = load_model("champion", registered["store"])
    assert moved.folder == source
    assert registry_cache.lookup(registered["store"], "papertrack", "champion").version == str(version.version)


def _files_tag(found: dict) -> dict[str, str]:
    from papertrack.models import manifest

    client = found["store"].client()
    return {manifest.FILES_TAG: client.get_model_version("papertrack", "1").tags[manifest.FILES_TAG]}


def test_any_write_to_the_store_stops_the_cache_from_being_used(registered):
    load_model("champion", registered["store"])
    assert registry_cache.lookup(registered["store"], "papertrack", "champion") is not None
    registered["store"].client().set_model_version_tag("papertrack", "1", "note", "a tag set by hand")
    assert registry_cache.lookup(registered["store"], "papertrack", "champion") is None


def test_a_cache_others_can_write_or_another_user_owns_is_not_trusted(registered):
    load_model("champion", registered["store"])
    cache = registered["home"] / registry_cache.CACHE_FILE
    os.chmod(cache, 0o666)
    assert registry_cache.lookup(registered["store"], "papertrack", "champion") is None
    os.chmod(cache, 0o644)
    assert registry_cache.lookup(registered["store"], "papertrack", "champion") is not None
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    os.chown(cache, NOBODY, NOBODY)
    assert registry_cache.lookup(registered["store"], "papertrack", "champion") is None


def test_a_database_in_wal_mode_or_inside_a_transaction_is_never_vouched_for(registered):
    database = registered["home"] / "mlflow.db"
    assert registry_cache.state(registered["store"]) is not None
    journal = database.with_name("mlflow.db-journal")
    journal.write_bytes(b"")
    assert registry_cache.state(registered["store"]) is None
    journal.unlink()
    with sqlite3.connect(database) as connection:
        connection.execute("PRAGMA journal_mode=WAL")
    assert registry_cache.state(registered["store"]) is None


def test_a_damaged_predictor_is_named_when_the_cache_is_used(registered, tmp_path, monkeypatch):
    load_model("champion", registered["store"])
    flip_a_byte(registered["predictor_file"])
    _without_mlflow(monkeypatch)
    result = label(tmp_path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert f"{registered['predictor_file']} of models:/papertrack@champion is damaged" in flat(result.output)


def test_a_planted_pickle_is_refused_and_never_runs_when_the_cache_is_used(registered, tmp_path, monkeypatch):
    load_model("champion", registered["store"])
    mark = tmp_path / "ran"
    python_model = registered["predictor_file"].parent.parent / "python_model.pkl"
    _plant(python_model, mark)
    _without_mlflow(monkeypatch)
    result = label(tmp_path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{python_model} of models:/papertrack@champion is damaged" in flat(result.output)
    assert not mark.exists()


def test_an_entry_edited_to_name_other_digests_refuses_the_files(registered, tmp_path, monkeypatch):
    """The cache names files; it does not vouch for them: files that do not match its digests are never loaded."""
    load_model("champion", registered["store"])
    cache = registered["home"] / registry_cache.CACHE_FILE
    data = json.loads(cache.read_text(encoding="utf-8"))
    data["entries"]["papertrack@champion"]["files"]["artifacts/predictor.pkl"] = "0" * 64
    cache.write_text(json.dumps(data), encoding="utf-8")
    _without_mlflow(monkeypatch)
    result = label(tmp_path)
    assert result.exit_code == 2
    assert f"{registered['predictor_file']} of models:/papertrack@champion is damaged" in flat(result.output)


def test_serve_finds_the_champions_copy_without_asking_mlflow(registered, tmp_path, monkeypatch):
    from papertrack.serving.http import bento_store
    from tests.conftest import bentoml_home

    with bentoml_home(tmp_path / "bentoml"):
        first = bento_store.import_champion(registered["store"])  # asks MLflow, imports the copy, fills the cache
        _without_mlflow(monkeypatch)
        monkeypatch.setattr(bento_store, "find_champion", lambda *args: pytest.fail("MLflow was asked"))
        again = bento_store.import_champion(registered["store"])
        assert str(again.tag) == str(first.tag) == "papertrack:v1-" + first.info.metadata["run_id"][:12].lower()
