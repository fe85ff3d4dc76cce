"""The shared layer: settings from the environment, the MLflow store's artifact location, the CLI's errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from papertrack import settings, store
from papertrack.errors import UsageError


def test_settings_read_every_variable_at_call_time(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.HOME_ENV, str(tmp_path / "home"))
    monkeypatch.setenv(settings.DATA_DIR_ENV, str(tmp_path / "data"))
    monkeypatch.setenv(settings.EMBEDDING_CACHE_ENV, "off")
    monkeypatch.setenv(settings.TORCH_THREADS_ENV, "3")
    monkeypatch.setenv(settings.WORKERS_ENV, "4")
    monkeypatch.setenv(settings.ACCESS_LOG_ENV, "true")
    monkeypatch.delenv(settings.TRACKING_URI_ENV, raising=False)
    current = settings.current()
    assert current.home == tmp_path / "home" and current.data_dir == tmp_path / "data"
    assert current.embedding_cache is None and current.torch_threads == 3 and current.workers == 4
    assert current.access_log and not current.trace_predictions
    assert current.tracking_uri == f"sqlite:///{tmp_path / 'home' / 'mlflow.db'}"
    monkeypatch.delenv(settings.EMBEDDING_CACHE_ENV)
    assert settings.current().embedding_cache == tmp_path / "home" / "embedding-cache"


REPO = Path(__file__).resolve().parents[2]


def _readme_settings_table() -> str:
    """The markdown table of the "Where things are kept" section (docs/reference.md), header included."""
    section = REPO.joinpath("docs", "reference.md").read_text(encoding="utf-8").split("## Where things are kept", 1)[1]
    lines = section.split("\n## ", 1)[0].splitlines()
    return "".join(line + "\n" for line in lines if line.startswith("|"))


def test_readme_settings_table_is_the_one_in_settings_py():
    assert _readme_settings_table() == settings.markdown_table(), "regenerate it: python -m papertrack.settings"


def test_every_environment_variable_the_code_reads_is_in_the_table():
    used = set()
    for folder in ("papertrack", "features", "models", "training", "serving"):
        for path in REPO.joinpath(folder).glob("**/*.py"):
            used |= set(re.findall(r"PAPERTRACK_[A-Z_]+", path.read_text(encoding="utf-8")))
    listed = {variable.name for variable in settings.VARIABLES}
    assert "PAPERTRACK_ALLOWED_HOSTS" in used and "PAPERTRACK_MAX_INPUT_BYTES" in used
    assert used - listed == set()


def test_the_tables_defaults_are_what_current_reads_from_an_empty_environment(tmp_path, monkeypatch):
    for variable in settings.VARIABLES:
        monkeypatch.delenv(variable.name, raising=False)
    monkeypatch.chdir(tmp_path)
    defaults = {v.name: v.default for v in settings.VARIABLES}
    current = settings.current()
    assert defaults["PAPERTRACK_HOME"].endswith("else `./.papertrack`") and current.home == tmp_path / ".papertrack"
    assert defaults["PAPERTRACK_DATA_DIR"].startswith("`../shared/data`")
    assert current.data_dir == tmp_path.parent / "shared" / "data"
    assert defaults["PAPERTRACK_EMBEDDING_CACHE"] == "`<home>/embedding-cache`"
    assert current.embedding_cache == tmp_path / ".papertrack" / "embedding-cache"
    assert defaults["PAPERTRACK_WORKERS"] == "`1`" and current.workers == 1
    assert defaults["PAPERTRACK_ACCESS_LOG"] == "`false`" and current.access_log is False
    assert defaults["PAPERTRACK_TRACE_PREDICTIONS"] == "`false`" and current.trace_predictions is False
    assert defaults["PAPERTRACK_ALLOWED_HOSTS"].startswith("none") and current.allowed_hosts == ()
    assert current.torch_threads is None  # features/embeddings.py then uses the CPUs this process may use
    assert defaults["PAPERTRACK_PLOTS"] == "`top2`" and settings.plot_choice("x", current.plots) == "top2"
    assert current.tracking_uri == f"sqlite:///{tmp_path / '.papertrack' / 'mlflow.db'}"


def test_a_bad_number_is_a_user_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv(settings.WORKERS_ENV, "two")
    with pytest.raises(UsageError, match="PAPERTRACK_WORKERS must be a whole number"):
        settings.current()


def test_which_candidates_get_plots_is_the_option_else_the_variable_else_top2(monkeypatch, tmp_path):
    from papertrack.cli import app
    from papertrack.training.config import SweepConfig

    monkeypatch.delenv(settings.PLOTS_ENV, raising=False)
    assert SweepConfig().plot_choice == "top2"
    monkeypatch.setenv(settings.PLOTS_ENV, " ALL ")
    assert SweepConfig().plot_choice == "all"
    assert SweepConfig(plots="none").plot_choice == "none"  # the option wins
    with pytest.raises(UsageError, match="plots must be one of top2, all, none, got 'some'"):
        SweepConfig(plots="some")
    monkeypatch.setenv(settings.PLOTS_ENV, "best")
    settings.current()  # only train reads it: other commands never fail on it
    with pytest.raises(UsageError, match="PAPERTRACK_PLOTS must be one of top2, all, none, got 'best'"):
        _ = SweepConfig().plot_choice
    data = tmp_path / "d.jsonl"
    data.write_text('{"abstract": "a b c", "label": "Theory"}\n')
    result = CliRunner().invoke(app, ["train", "--data", str(data), "--plots", "top3"])
    assert result.exit_code == 2 and "plots must be one of top2, all, none, got 'top3'" in result.output


@pytest.mark.slow  # 12 s (--durations, loaded machine): a fresh MLflow SQLite store (schema migrations)
def test_user_sqlite_store_keeps_artifacts_under_papertrack_home(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(settings.HOME_ENV, str(tmp_path / "home"))
    monkeypatch.setenv(settings.TRACKING_URI_ENV, f"sqlite:///{tmp_path / 'mine.db'}")
    mine = store.open()
    assert mine.tracking_uri == f"sqlite:///{tmp_path / 'mine.db'}" and mine.chosen == "user"
    experiment = mine.experiment()
    assert experiment.artifact_location == (tmp_path / "home" / "artifacts").as_uri()
    client = mine.client()
    run = client.create_run(experiment.experiment_id)
    client.log_text(run.info.run_id, "x", "probe.txt")
    assert not (tmp_path / "mlruns").exists()
    assert list((tmp_path / "home" / "artifacts").rglob("probe.txt"))


def test_cli_prints_user_errors_in_one_line_and_lets_bugs_show_their_traceback(monkeypatch, tmp_path):
    from papertrack.cli import app
    from papertrack.training import sweep

    data = tmp_path / "d.jsonl"
    data.write_text('{"abstract": "a b c", "label": "Theory"}\n')
    result = CliRunner().invoke(app, ["train", "--data", str(data), "-c", "no-such-candidate"])
    assert result.exit_code == 2
    assert "error:" in result.output and "no-such-candidate" in result.output

    def broken(*args, **kwargs):
        raise KeyError("internal bug")

    monkeypatch.setattr(sweep, "run_sweep", broken)
    result = CliRunner().invoke(app, ["train", "--data", str(data)])
    assert isinstance(result.exception, KeyError)  # not turned into a user error
