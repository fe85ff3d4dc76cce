"""Quiet output by default, help text at 80 columns, a subarea typo's nearest
known track (9), labeled input that overlaps the model's training data (10), one CSV format for the page and
the CLI (2)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from papertrack.features.labels import nearest_known_label, normalise_label
from tests.conftest import CHROMIUM, CHROMIUM_ARGS

COMMANDS = ["train", "runs", "serve", "build", "label", "suggest", "tracking-server", "taxonomies", "crosswalk"]


def help_text(*args: str) -> str:
    from papertrack.cli import app

    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


# --------------------------------------------------------------------------- 8. help text


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_is_plain_and_fits_80_columns(command):
    text = help_text(*([command] if command else []))
    too_long = [line for line in text.splitlines() if len(line) > 80]
    assert not too_long, too_long
    assert "<list[" not in text and "<str>" not in text and "<path>" not in text
    assert not re.search(r"\{[a-z_]+\}", text), text  # typer's {dumps}... placeholder
    cut = [
        line
        for line in text.splitlines()
        if "…" in line or (re.search(r"[a-z]\.\.\.$", line) and not line.startswith("Usage:"))
    ]
    assert not cut, cut  # no description or default cut short


def test_help_keeps_bracketed_extras_and_whole_defaults():
    label = " ".join(help_text("label").split())
    assert "needs the [spark] extra" in label
    assert "Usage: papertrack label [OPTIONS] DUMPS..." in label
    assert "[default: models:/papertrack@champion]" in label
    assert "-o, --output PATH" in label and "--spark-conf TEXT" in label
    assert "needs the [team] extra" in " ".join(help_text("tracking-server").split())
    train = " ".join(help_text("train").split())
    assert "-d, --data PATH" in train and "every labeled file named *_topics.jsonl" in train
    top = " ".join(help_text().split())
    assert "-v, --verbose" in top and "refit the best, register it." in top


# --------------------------------------------------------------------------- 7. quiet by default


def test_quiet_libraries_filters_the_known_notices(monkeypatch):
    from papertrack import cli

    for key in cli.QUIET_ENV:
        monkeypatch.delenv(key, raising=False)
    cli.quiet_libraries(verbose=False)
    assert os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] == "false"
    assert logging.getLogger("mlflow").getEffectiveLevel() >= logging.WARNING
    assert logging.getLogger("alembic").getEffectiveLevel() >= logging.WARNING
    record = logging.LogRecord(
        "mlflow.pyfunc",
        logging.WARNING,
        __file__,
        1,
        "Passing a Python object as `python_model` causes it to be serialized",
        None,
        None,
    )
    assert not logging.getLogger("mlflow.pyfunc").filter(record)


def test_papertrack_warnings_reach_the_console_as_warning_lines(capsys):
    from papertrack import cli

    cli.quiet_libraries(verbose=False)
    logging.getLogger("papertrack.features.labels").warning("something to fix")
    assert "warning: something to fix" in capsys.readouterr().err


# --------------------------------------------------------------------------- 9. subarea typos


def test_nearest_known_label():
    assert nearest_known_label("Theory · Learning Theroy") == "Theory · Learning Theory"
    assert nearest_known_label("theory -> learning theroy") == "Theory · Learning Theory"
    assert nearest_known_label("Theroy · Learning Theory") == "Theory · Learning Theory"
    assert nearest_known_label("Theroy") == "Theory"
    assert nearest_known_label("Theory · Learning Theory") is None  # known
    assert nearest_known_label("Theory · Quantum Foundations") is None  # nothing close: a new track


def test_a_subarea_typo_is_reported_once_with_the_nearest_track(tmp_path, caplog):
    from papertrack.features import labels
    from papertrack.training.dataset import load_dataset

    labels._warned.discard(("Theory", "Learning Theroy"))
    data = tmp_path / "typo.jsonl"
    rows = [
        {"abstract": f"We bound the sample complexity of learning {i}.", "label": "Theory · Learning Theroy"}
        for i in range(3)
    ] + [{"abstract": "A new optimiser.", "label": "Optimization · Non-Convex"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="papertrack"):
        records, _ = load_dataset(data)
    assert [r.label for r in records][0] == "Theory · Learning Theroy"  # kept as written (a new track)
    messages = [r.getMessage() for r in caplog.records if "did you mean" in r.getMessage()]
    assert messages == [
        "label 'Theory · Learning Theroy': 'Learning Theroy' is not a subarea of Theory; "
        "did you mean 'Theory · Learning Theory'? (kept as a track of its own)"
    ]
    assert normalise_label("Theory · Learning Theory") == ("Theory", "Learning Theory")


# --------------------------------------------------------------------------- 10. labeled input the model trained on


TRAINED_ON = [
    "We bound the sample complexity of learning halfspaces with margin under label noise.",
    "A diffusion model for protein structure generation with equivariant networks.",
]


def _fake_backend_with_index():
    from types import SimpleNamespace

    from papertrack.models.neighbors import NeighborIndex
    from tests.conftest import FakeBackend

    index = NeighborIndex.build(TRAINED_ON, ["t1", "t2"], [None, None], ["Theory", "Deep Learning"])

    class Backend(FakeBackend):
        predictor = SimpleNamespace(neighbors=index, training_profile=None)

    return Backend


def test_neighbor_index_knows_its_training_abstracts():
    backend = _fake_backend_with_index()
    index = backend.predictor.neighbors
    assert index.contains(TRAINED_ON[0]) and index.contains("  " + TRAINED_ON[1].replace(" ", "\n  ", 3))
    assert not index.contains("We bound the sample complexity of learning halfspaces, differently.")


def test_label_says_when_labeled_input_is_training_data(tmp_path, monkeypatch):
    import papertrack.serving.batch.labeler as labeler
    from papertrack.cli import app

    monkeypatch.setattr(labeler, "LocalBackend", _fake_backend_with_index())
    dump = tmp_path / "dump.jsonl"
    rows = [
        {"abstract": TRAINED_ON[0], "label": "Theory"},
        {"abstract": TRAINED_ON[1], "label": "Deep Learning"},
        {"abstract": "An unseen abstract about optimisation of transformers.", "label": "Optimization"},
        {"abstract": "An unlabeled abstract about something else entirely."},
    ]
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = CliRunner().invoke(app, ["label", str(dump), "-o", str(tmp_path / "out.csv"), "--no-progress"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "3 inputs had a label" in text
    assert "note: 2 of 3 labeled records are in the model's training data: their accuracy is not a fair figure" in text

    dump.write_text(json.dumps(rows[2]) + "\n", encoding="utf-8")  # nothing it trained on: no note
    result = CliRunner().invoke(app, ["label", str(dump), "-o", str(tmp_path / "out2.csv"), "--no-progress"])
    assert result.exit_code == 0 and "training data" not in result.output


# --------------------------------------------------------------------------- 5. the Python API


def test_import_papertrack_is_light():
    code = (
        "import sys, papertrack; print(callable(papertrack.load), papertrack.__version__, "
        "any(m.split('.')[0] in ('mlflow', 'sklearn', 'pandas', 'bentoml') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "True" and out[2] == "False"


@pytest.mark.slow  # 8 s (--durations, loaded machine): a fresh MLflow SQLite store (schema migrations)
def test_load_without_a_model_says_what_to_do(tmp_path, monkeypatch):
    import papertrack
    from papertrack.errors import NoModelError

    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "empty-home"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NoModelError, match="papertrack train"):
        papertrack.load()
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "empty-home").exists()  # a read creates none


@pytest.mark.slow
def test_api_answers_are_the_pyfunc_and_the_cli_answers(trained, tmp_path):
    import mlflow
    import pandas as pd

    import papertrack
    from papertrack.cli import app

    abstracts = [json.loads(line)["abstract"] for line in Path(trained["data"]).read_text().splitlines()[:5]]
    model = papertrack.load()
    assert model.model_uri == "models:/papertrack@champion"
    answers = model.predict(abstracts, top_k=3)
    assert len(answers) == 5 and all(len(a["tracks"]) == 3 for a in answers)
    assert model.predict(abstracts[0]) == answers[:1]

    # the pyfunc, with MLflow pointed at papertrack's store
    with papertrack.store.using(papertrack.store.open(create=False)):
        pyfunc = mlflow.pyfunc.load_model("models:/papertrack@champion")
    out = pyfunc.predict(pd.DataFrame({"abstract": abstracts}), params={"top_k": 3, "output": "json"})
    assert [json.loads(a) for a in out["answer"]] == answers

    # papertrack label's rows
    dump = tmp_path / "in.jsonl"
    dump.write_text("".join(json.dumps({"id": f"p{i}", "abstract": a}) + "\n" for i, a in enumerate(abstracts)))
    result = CliRunner().invoke(app, ["label", str(dump), "-o", str(tmp_path / "out.jsonl"), "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["tracks"] for r in rows] == [
        [{"label": t["label"], "probability": t["probability"]} for t in a["tracks"]] for a in answers
    ]

    frame = model.predict_frame(pd.Series(abstracts, index=list("abcde")))
    assert list(frame.index) == list("abcde") and list(frame.columns[:4]) == [
        "pred_track",
        "pred_probability",
        "pred_top_k",
        "pred_area",
    ]
    assert frame["pred_track"].tolist() == [a["tracks"][0]["label"] for a in answers]
    assert frame["pred_top_k"].iloc[0].startswith(f"{answers[0]['tracks'][0]['label']} (")
    assert frame["pred_set"].tolist() == [a["prediction_set"] for a in answers]
    # the README's join onto a labeled dump (its own "area", "label" columns) does not clash
    papers = pd.DataFrame({"abstract": abstracts, "area": ["x"] * 5, "label": ["y"] * 5}, index=list("abcde"))
    joined = papers.join(model.predict_frame(papers["abstract"]))
    assert joined["area"].tolist() == ["x"] * 5 and joined["pred_area"].tolist() == [
        a["areas"][0]["area"] for a in answers
    ]

    why = model.explain(abstracts[0])
    assert why["tracks"] == model.predict(abstracts[0])[0]["tracks"] and why["method"]["kind"]
    assert len(why["explanations"]) == 3


# --------------------------------------------------------------------------- 7 and 9 end to end: train, label


NOISE = ("Downloading artifacts", "WARNING mlflow", "INFO mlflow", "CloudPickle", "Hint: Inferred schema")


@pytest.mark.slow
def test_train_and_label_are_quiet_and_report_a_subarea_typo(labeled_subset, tmp_path):
    data = tmp_path / "data.jsonl"
    typo = {
        "abstract": "We prove generalisation bounds for overparameterised networks via PAC-Bayes.",
        "label": "Theory · Learning Theroy",
    }
    data.write_text(Path(labeled_subset).read_text(encoding="utf-8") + json.dumps(typo) + "\n", encoding="utf-8")
    env = {**os.environ, "PAPERTRACK_HOME": str(tmp_path / "home"), "COLUMNS": "120"}
    env.pop("MLFLOW_TRACKING_URI", None)
    for key in ("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "MLFLOW_LOGGING_LEVEL"):
        env.pop(key, None)
    cli = [sys.executable, "-m", "papertrack.cli"]
    train = subprocess.run(
        [*cli, "train", "-c", "tfidf-word-cnb", "--folds", "2", "--data", str(data)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert train.returncode == 0, train.stdout + train.stderr
    output = train.stdout + train.stderr
    assert "warning: label 'Theory · Learning Theroy'" in output
    assert "did you mean 'Theory · Learning Theory'?" in output
    assert not [n for n in NOISE if n in output], output
    from papertrack import registry_cache
    from papertrack import store as mlstore

    # train kept what the registry answers for the champion: the first label after it starts without MLflow
    cached = registry_cache.lookup(mlstore.open(create=False, home=tmp_path / "home"), "papertrack", "champion")
    assert cached is not None and cached.version == "1"

    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps({"abstract": typo["abstract"]}) + "\n", encoding="utf-8")
    label = subprocess.run(
        [*cli, "label", str(dump), "-o", str(tmp_path / "out.csv")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert label.returncode == 0, label.stdout + label.stderr
    assert not [n for n in NOISE if n in label.stdout + label.stderr], label.stdout + label.stderr

    verbose = subprocess.run(
        [*cli, "-v", "label", str(dump), "-o", str(tmp_path / "out2.csv"), "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert verbose.returncode == 0, verbose.stdout + verbose.stderr


# --------------------------------------------------------------------------- 2. one CSV for the page and the CLI

PAGE_JS = Path(__file__).resolve().parents[2] / "serving" / "http" / "page" / "static" / "page.js"


@pytest.mark.slow  # mock answers, no model, no server — but Chromium starts: 2.3 s (--durations)
def test_the_page_csv_is_the_cli_csv():
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is missing")
    playwright_api = pytest.importorskip("playwright.sync_api")
    from papertrack.features.ingest import Record
    from papertrack.models.answer import EXTRA_FIELDS
    from papertrack.serving.batch.labeler.rows import RowFormat

    def answer(probabilities, prediction_set, confident):
        names = ["Theory · Learning Theory", "Deep Learning · Theory", '=HYPERLINK("x")']
        return {
            "tracks": [
                {"label": n, "area": n.split(" · ")[0], "subarea": None, "probability": p}
                for n, p in zip(names, probabilities)
            ],
            "areas": [
                {"area": "Theory", "probability": probabilities[0] + 1e-17},
                {"area": "Deep", "probability": 0.0},
            ],
            "prediction_set": prediction_set,
            "confident": confident,
        }

    papers = [
        {
            "id": "=cmd|' /C calc'!A0",
            "line": 3,
            "title": 'A "quoted", title\nwith a newline',
            "label": "Theory · Learning Theory",
            "answer": answer([0.9999955112596849, 2.8893813152852626e-07, 5e-05], ["Theory · Learning Theory"], True),
        },
        {
            "id": "p2",
            "line": 9,
            "title": None,
            "label": None,
            "answer": {
                **answer([0.5, 0.25, 0.0001], ["Theory · Learning Theory", "Deep Learning · Theory"], False),
                "warning": 'only 12% of the abstract\'s words are known to the model, "quoted"',
            },
        },
        {
            "id": "-p3",
            "line": 12,
            "title": "@home",
            "label": "Deep Learning · Theory",
            "answer": answer([1.0, 1e-300, 0.123456789012345678], [], False),
        },
        {"id": "p4", "line": 15, "title": "rejected", "label": None, "answer": {"error": "abstract too long"}},
    ]
    rows = RowFormat("csv", 3, extras=EXTRA_FIELDS)
    kept = [p for p in papers if "error" not in p["answer"]]
    expected = (
        rows.header()
        + rows.rows(
            (Record(p["id"], "abstract", p["title"], p["label"], None, None, "dump.jsonl", p["line"]), p["answer"])
            for p in kept
        )
    ).decode("utf-8")

    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_content("<!doctype html><html><body></body></html>")
            page.add_script_tag(content=PAGE_JS.read_text(encoding="utf-8"))  # wire() fails here: no form
            produced = page.evaluate(
                "(papers) => csvRows(papers.map((p) => ({id: p.id, line: p.line, title: p.title, label: p.label})),"
                " papers.map((p) => p.answer), 'dump.jsonl')",
                papers,
            )
        finally:
            browser.close()
    assert produced == expected


# --------------------------------------------------------------------------- 11. papertrack build


def test_bento_spec_is_the_bentofile_with_the_champions_requirements(tmp_path):
    import yaml

    from papertrack.serving.http.serve_command import BENTO_SPEC, bento_spec, champion_requirements

    repo = yaml.safe_load((Path(__file__).resolve().parents[2] / "bentofile.yaml").read_text())
    for key in ("service", "name", "labels", "description", "include", "envs"):
        assert BENTO_SPEC[key] == repo[key], key
    spec = bento_spec("dist/papertrack-0.1.0-py3-none-any.whl")
    assert spec["python"] == {
        "lock_packages": False,
        "wheels": ["dist/papertrack-0.1.0-py3-none-any.whl"],
        "requirements_txt": "requirements.txt",
    }
    mlflow_requirements = tmp_path / "requirements.txt"
    mlflow_requirements.write_text(
        "mlflow==3.17.2\ntorch==2.13.0\nsentence-transformers==6.2.0\npapertrack==0.1.0\n# comment\nbentoml==1.4.1\n"
    )
    assert champion_requirements(mlflow_requirements) == [
        "mlflow==3.17.2",
        "torch==2.13.0",
        "sentence-transformers==6.2.0",
    ]


def _fresh_venv_with_the_wheel(tmp_path: Path, wheel: Path) -> Path:
    """A venv under tmp_path with papertrack installed from ``wheel`` (not editable); its other packages come
    from the environment running the tests (a .pth line), so nothing is downloaded."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = next((venv / "lib").glob("python3*/site-packages"))
    others = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]  # .pth lines: no .pth runs
    (packages / "00-deps.pth").write_text("\n".join(others) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(packages), str(wheel)], check=True
    )
    return venv / "bin" / "python"


@pytest.mark.slow
def test_build_works_from_an_installed_package_and_packs_the_champions_requirements(trained, tmp_path):
    import tarfile
    import zipfile

    from papertrack.serving.http.serve_command import build_wheel

    repo = Path(__file__).resolve().parents[2]
    before = set(p.name for p in repo.iterdir())
    wheel = build_wheel(tmp_path / "wheel")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "papertrack/serving/http/page/static/page.js" in names and "papertrack/features/labels.py" in names
    python = _fresh_venv_with_the_wheel(tmp_path, wheel)
    where = subprocess.run(
        [str(python), "-c", "import papertrack.serving as s; print(s.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(tmp_path / "venv") in where  # the installed copy, not the checkout

    env = {**os.environ, "BENTOML_HOME": str(tmp_path / "bentoml"), "COLUMNS": "200"}
    archive = tmp_path / "out" / "papertrack.bento"
    built = subprocess.run(
        [str(python), "-m", "papertrack.cli", "build", "--export", str(archive)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert set(p.name for p in repo.iterdir()) == before  # nothing written into the checkout (no dist/)
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        requirements = tar.extractfile("./env/python/requirements.txt").read().decode().splitlines()
    assert "./env/python/wheels/papertrack-0.1.0-py3-none-any.whl" in names
    assert any(name.endswith("mlflow_model/artifacts/predictor.pkl") for name in names)
    pinned = {line.split("==")[0] for line in requirements if "==" in line}
    assert {"scikit-learn", "numpy", "mlflow", "bentoml"} <= pinned, requirements  # the champion's own pins
    assert not any(line.startswith("papertrack") for line in requirements)
