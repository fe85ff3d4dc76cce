"""The Python API: ``import papertrack`` is light, ``papertrack.load()`` without a model says what to do, and the
API's answers are the registered pyfunc's and `papertrack label`'s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner


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
