"""One message for a model that does not exist, whichever command asks; CSV problems found before the model loads
(delimiter detected, columns named by options); predict_frame's columns that cannot clash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from papertrack import settings, store
from papertrack.cli import app
from papertrack.errors import NoModelError
from papertrack.features.ingest import iter_records
from papertrack.features.ingest.columns import check_inputs, use_columns

ABSTRACT = "We propose a sparse attention mechanism for transformers that attends to a learned subset of tokens."


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def no_home(monkeypatch, tmp_path):
    """No PAPERTRACK_HOME (restored afterwards even when papertrack sets it) and a private per-user state folder."""
    monkeypatch.setenv(settings.HOME_ENV, "placeholder")
    monkeypatch.delenv(settings.HOME_ENV)
    monkeypatch.delenv(settings.TRACKING_URI_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


# --------------------------------------------------------------------------- 4: one message for a missing model


@pytest.fixture(scope="module")
def registered_store(tmp_path_factory):
    """A store with model papertrack, version 1 = champion and version 2 = challenger (not loadable models: the
    messages are about what exists), and an empty store."""
    import mlflow

    home = tmp_path_factory.mktemp("registered") / ".papertrack"
    empty = tmp_path_factory.mktemp("empty") / ".papertrack"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(settings.HOME_ENV, str(empty))
        store.open()
        mp.setenv(settings.HOME_ENV, str(home))
        mine = store.open()
    client = mine.client()
    run = client.create_run(mine.experiment().experiment_id)
    client.log_text(run.info.run_id, "not a model", "model/MLmodel")
    client.set_terminated(run.info.run_id)
    for alias in ("champion", "challenger"):
        with store.using(mine):
            version = mlflow.register_model(f"runs:/{run.info.run_id}/model", settings.MODEL_NAME)
        client.set_registered_model_alias(settings.MODEL_NAME, alias, version.version)
    return {"home": home, "empty": empty}


INVENTORY = "Registered: papertrack (aliases challenger = version 2, champion = version 1; versions 1-2)."


def _message(result) -> str:
    assert result.exit_code == 1, result.output
    return " ".join(result.output.split()).removeprefix("error: ")


@pytest.mark.parametrize(
    ("args", "asked", "problem", "fix"),
    [
        (
            ("label", "{dump}", "-o", "{out}.jsonl", "--model", "models:/papertrack@prod"),
            "models:/papertrack@prod",
            "model 'papertrack' has no alias 'prod'.",
            "--model champion",
        ),
        (
            ("label", "{dump}", "-o", "{out}.jsonl", "--model", "prod"),
            "prod (models:/papertrack@prod)",
            "model 'papertrack' has no alias 'prod'.",
            "--model champion",
        ),
        (
            ("label", "{dump}", "-o", "{out}.jsonl", "--model", "models:/papertrak@champion"),
            "models:/papertrak@champion",
            "no model is registered as 'papertrak' (did you mean 'papertrack'?).",
            "--model champion",
        ),
        (
            ("label", "{dump}", "-o", "{out}.jsonl", "--model", "models:/papertrack/7"),
            "models:/papertrack/7",
            "model 'papertrack' has no version 7.",
            "--model champion",
        ),
        (
            ("suggest", "{dump}", "-o", "{out}.txt", "--model", "champoin"),
            "champoin (models:/papertrack@champoin)",
            "model 'papertrack' has no alias 'champoin' (did you mean 'champion'?).",
            "--model champion",
        ),
        (
            ("serve", "--alias", "prod"),
            "models:/papertrack@prod",
            "model 'papertrack' has no alias 'prod'.",
            "--alias champion",
        ),
        (
            ("build", "--alias", "prod"),
            "models:/papertrack@prod",
            "model 'papertrack' has no alias 'prod'.",
            "--alias champion",
        ),
    ],
)
def test_every_command_gives_the_one_message_for_a_missing_model(
    registered_store, monkeypatch, tmp_path, args, asked, problem, fix
):
    monkeypatch.setenv(settings.HOME_ENV, str(registered_store["home"]))
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps({"abstract": ABSTRACT}) + "\n", encoding="utf-8")
    args = tuple(a.format(dump=dump, out=tmp_path / "out") for a in args)
    message = _message(_run(*args))
    where = f"{registered_store['home']} (PAPERTRACK_HOME)"
    assert message == (
        f"cannot load {asked} from {where}: {problem} {INVENTORY} Pass one of them, e.g. {fix}, or run "
        f"`papertrack train` to register a new version."
    )


def test_the_python_api_gives_the_same_message(registered_store, monkeypatch):
    import papertrack

    monkeypatch.setenv(settings.HOME_ENV, str(registered_store["home"]))
    with pytest.raises(NoModelError) as caught:
        papertrack.load("prod")
    assert str(caught.value).endswith(
        f"has no alias 'prod'. {INVENTORY} Pass one of them, e.g. papertrack.load('champion'), or run `papertrack "
        f"train` to register a new version."
    )


def test_an_empty_store_says_to_train(registered_store, monkeypatch, tmp_path):
    monkeypatch.setenv(settings.HOME_ENV, str(registered_store["empty"]))
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps({"abstract": ABSTRACT}) + "\n", encoding="utf-8")
    for args in (("label", str(dump), "-o", str(tmp_path / "o.jsonl")), ("serve",)):
        message = _message(_run(*args))
        assert message.startswith("cannot load models:/papertrack@champion from ")
        assert "Nothing is registered in this store yet. Run `papertrack train` to train and register a champion" in (
            message
        )


# --------------------------------------------------------------------------- 5: CSV inputs


def _abstracts(path, **columns) -> list[tuple]:
    with use_columns(**columns):
        return [(r.id, r.title, r.abstract) for r in iter_records(path)]


def test_semicolon_and_tab_separated_files_are_read(tmp_path):
    semicolon = tmp_path / "a.csv"
    semicolon.write_text('title;abstract\nSparse;"We propose, in short; a method."\n', encoding="utf-8")
    tab = tmp_path / "a.tsv"
    tab.write_text("id\ttitle\tabstract\np1\tSparse\tWe propose, in short; a method.\n", encoding="utf-8")
    comma = tmp_path / "b.csv"
    comma.write_text('title,abstract\nSparse,"We propose; in short, a method."\n', encoding="utf-8")
    assert [r[1:] for r in _abstracts(semicolon)] == [("Sparse", "We propose, in short; a method.")]
    assert _abstracts(tab) == [("p1", "Sparse", "We propose, in short; a method.")]
    assert [r[1:] for r in _abstracts(comma)] == [("Sparse", "We propose; in short, a method.")]


def test_column_options_name_the_abstract_title_and_id(tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text("key,headline,text,abstract\nk1,Sparse,We propose a method.,old\n", encoding="utf-8")
    assert _abstracts(path, abstract="Text", title="headline", id="key") == [("k1", "Sparse", "We propose a method.")]
    jsonl = tmp_path / "papers.jsonl"
    jsonl.write_text(json.dumps({"text": "We propose a method."}) + "\n", encoding="utf-8")
    assert [r[2] for r in _abstracts(jsonl, abstract="text")] == ["We propose a method."]


def test_a_missing_column_is_found_before_the_model_loads(tmp_path, monkeypatch, registered_store):
    monkeypatch.setenv(settings.HOME_ENV, str(registered_store["empty"]))  # no model: it must not get that far
    path = tmp_path / "papers.csv"
    path.write_text("title;text\nSparse;We propose a method.\n", encoding="utf-8")
    expected = (
        f"{path}:1: CSV has no 'abstract' column (columns: title, text); name the abstract's column with "
        f"--abstract-column"
    )
    for args in (
        ("label", str(path), "-o", str(tmp_path / "o.jsonl")),
        ("suggest", str(path)),
        ("train", "-d", str(path)),
    ):
        result = _run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert " ".join(result.output.split()) == f"error: {expected}", args
    result = _run("label", str(path), "-o", str(tmp_path / "o.jsonl"), "--title-column", "heading")
    assert (
        " ".join(result.output.split())
        == f"error: {path}:1: CSV has no 'abstract', 'heading' columns (columns: title, text)"
    )
    with use_columns(abstract="text"):
        check_inputs([path])  # named: nothing missing


def test_a_column_named_twice_is_a_usage_error(tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text("title,abstract\nA,B\n", encoding="utf-8")
    result = _run("label", str(path), "-o", str(tmp_path / "o.jsonl"), "--abstract-column", "x", "--title-column", "X")
    assert result.exit_code == 2 and "one column is named by two of --abstract-column" in result.output


# --------------------------------------------------------------------------- 2: predict_frame's columns


def test_predict_frame_columns_cannot_clash_with_a_labeled_dump():
    from papertrack.api import FRAME_COLUMNS

    labeled_dump_fields = {"id", "title", "abstract", "label", "area", "subarea", "topic", "authors", "venue", "year"}
    assert all(c.startswith("pred_") for c in FRAME_COLUMNS) and not labeled_dump_fields & set(FRAME_COLUMNS)


def test_iclr_records_have_the_fields_the_frame_would_have_clashed_with(data_dir):
    first = json.loads(Path(data_dir, "iclr2024_topics.jsonl").open(encoding="utf-8").readline())
    assert "area" in first or "label" in first


def test_the_cli_starts_without_importing_mlflow():
    """``papertrack --version`` or a CSV header error must not wait for MLflow's import (seconds)."""
    import subprocess
    import sys

    code = "import sys, papertrack.cli; print(sorted({m.split('.')[0] for m in sys.modules} & {'mlflow', 'sklearn'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
