"""The pieces both serving runtimes share (one output-kind rule, one model loader) and the serving errors that are
the user's to fix (under PapertrackError: the CLI prints one ``error:`` line). Fast: no model is trained."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from papertrack.errors import NoModelError, PapertrackError, UsageError


@pytest.mark.parametrize(
    ("name", "kind"),
    [("out.jsonl", "jsonl"), ("OUT.NDJSON", "jsonl"), ("out.csv", "csv")],
)
def test_the_local_labeler_writes_jsonl_and_csv(name, kind):
    from papertrack.serving.batch.labeler.run import output_kind

    assert output_kind(Path(name)) == kind


@pytest.mark.parametrize("name", ["out.parquet", "out.txt", "out", "out.json"])
def test_the_local_labeler_refuses_other_outputs_with_the_fix(name):
    from papertrack.serving.batch.labeler import LabelError
    from papertrack.serving.batch.labeler.run import output_kind

    with pytest.raises(LabelError) as caught:
        output_kind(Path(name))
    assert str(caught.value) == f"{name}: the output must end in .jsonl or .csv"


def test_the_spark_engine_writes_jsonl_and_parquet_folders():
    from papertrack.serving.batch.labeler.spark.job import output_kind

    assert output_kind(Path("out.jsonl")) == "jsonl"
    assert output_kind(Path("out.parquet")) == "parquet"
    with pytest.raises(UsageError) as caught:
        output_kind(Path("out.csv"))
    assert (
        str(caught.value)
        == "out.csv: with --engine spark the output is a folder of partitions named *.jsonl or *.parquet"
    )


def test_suggest_writes_text_jsonl_and_csv():
    from papertrack.serving.batch.suggest import output_kind

    assert [output_kind(Path(n)) for n in ("a.txt", "a.jsonl", "a.csv")] == ["text", "jsonl", "csv"]
    with pytest.raises(UsageError, match=r"^a\.parquet: the output must end in \.txt \(labeled text dump\)"):
        output_kind(Path("a.parquet"))


@pytest.mark.slow  # 7 s (--durations, loaded machine): a fresh MLflow SQLite store (schema migrations)
def test_the_model_loader_says_how_to_get_a_model(tmp_path, monkeypatch):
    from papertrack.serving.batch.labeler import ModelMissing
    from papertrack.serving.model_loader import TRAIN_HINT, load_model

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    missing = tmp_path / "no-such-model"
    from papertrack import store

    with pytest.raises(NoModelError, match=r"^no papertrack store at .*home \(PAPERTRACK_HOME\): it has no mlflow\.db"):
        store.open(create=False)  # no store: none is created by a read
    assert not (tmp_path / "home").exists()
    empty = store.open()  # an empty store
    with pytest.raises(NoModelError) as caught:
        load_model(str(missing), empty)
    message = str(caught.value)
    assert message.startswith(f"cannot load {missing} from ") and TRAIN_HINT in message and "\n" not in message
    with pytest.raises(ModelMissing):  # the labeler's own error, still a NoModelError (exit status 1)
        load_model(str(missing), empty, error=ModelMissing)


def test_the_spark_session_environment_is_given_for_its_start_only(monkeypatch):
    from papertrack.serving.batch.labeler.spark.session import _environment_defaults

    monkeypatch.delenv("PAPERTRACK_TEST_ABSENT", raising=False)
    monkeypatch.setenv("PAPERTRACK_TEST_PRESENT", "mine")
    before = dict(os.environ)
    with _environment_defaults({"PAPERTRACK_TEST_ABSENT": "a", "PAPERTRACK_TEST_PRESENT": "b"}):
        assert os.environ["PAPERTRACK_TEST_ABSENT"] == "a"
        assert os.environ["PAPERTRACK_TEST_PRESENT"] == "mine"  # a user's setting wins
    assert dict(os.environ) == before


def test_a_failed_build_step_is_a_papertrack_error_with_its_output():
    from papertrack.serving.http.serve_command import BuildError, _run

    with pytest.raises(BuildError) as caught:
        _run([sys.executable, "-c", "import sys; print('step said this'); sys.exit(3)"], "bentoml build")
    assert isinstance(caught.value, PapertrackError)
    assert str(caught.value).startswith("bentoml build failed (exit code 3):\nstep said this")


def test_drift_of_a_model_without_profile_is_a_papertrack_error():
    from papertrack.serving.http.drift_api import NoProfile, batch_report

    class Unprofiled:
        training_profile = None

    with pytest.raises(NoProfile, match="retrain it with `papertrack train`") as caught:
        batch_report(Unprofiled(), ["an abstract"], [None])
    assert isinstance(caught.value, PapertrackError)
