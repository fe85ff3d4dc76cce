"""The hostile-input corpus (``tests/hostile_corpus.py``) against ``papertrack label``, ``suggest`` and ``train``,
each case with a memory ceiling and a time ceiling.

Every case must end the way README "Limits and failure modes" says: the exit code; a fatal problem as one
``error:`` line naming the file (and the record's line when there is one), never a traceback; the errors file's
rows (line and kind); nothing written over an input or through a planted link.

Memory: the cases run in one child process (``tests/hostile_runner.py``: the imports and the model are loaded
once) whose peak (VmHWM) is reset before each case, so each case's peak is its own, measured against what the
process held before it. ``ru_maxrss`` would carry the forked pytest's size and every earlier case's. The model is
the session's ``trained`` champion (conftest), so this module is slow. ``/parse_dump`` gets the same corpus in
test_hostile_corpus_parse_dump.py.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.hostile_cases import (
    GROWTH_MIB,
    LABEL,
    LINEAR_SECONDS,
    MAX_INPUT_MIB,
    REPO,
    SECONDS,
    SLOW_SECONDS,
    file_lines,
)

pytestmark = pytest.mark.slow


# `train`: every case that is no good training data is refused before any fit, with one error line
TRAIN = {
    "bomb-one-line.jsonl.gz": ":3: line is 67,108,895 bytes, over the 1 MiB limit of one line",
    "bomb-many-lines.jsonl.gz": ":2: no label",
    "lone-surrogates.jsonl": ":2: field 'id' holds the lone surrogate escape \\udc00",
    "utf16-bom.jsonl": ": the file is UTF-16 text, not UTF-8",
    "utf16-no-bom.txt": ": the file is UTF-16 text, not UTF-8",
    "wide-abstract.jsonl": ":2: line is 5,242,965 bytes, over the 1 MiB limit of one line",
    "wide-title.jsonl": ":2: line is 2,097,426 bytes, over the 1 MiB limit of one line",
    "spread-records.json": ":2: no label",  # the first record starts on line 2 (after "[")
    "many-labels.jsonl": ": 1,500 distinct labels for 1,500 labeled records",
    "nul-bytes.jsonl": ":2: invalid JSON: Invalid control character",
    "invalid-json.jsonl": ":2: invalid JSON: Unterminated string",
    "pruned-vocabulary.jsonl": ": no word is in at least 2 and at most 90% of the 12 abstracts",
    "long-paragraph.txt": ":3: no label (unlabeled text layout)",
    "open-quote.csv": ":2: no label",
    "one-object.json": ":1: expected a JSON array of records",
    "empty.jsonl": ": file is empty",
    "long-record.txt.gz": ":7: the paragraphs under label line 'Deep Learning · Graph Neural Networks' are 48,048,000",
    "zeros.txt": ": its first 4,096 bytes are all zero (NUL bytes): not text",
}


def digests(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` (links as their target text): what no command may change."""
    return {
        p.name: os.readlink(p) if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
    }


def out_name(case: str, command: str) -> str:
    suffix = {"label": ".csv" if case.endswith(".csv") else ".jsonl", "suggest": ".txt"}[command]
    return f"{case}.{command}{suffix}"


@pytest.fixture(scope="module")
def runs(trained, corpus, tmp_path_factory):
    """Every CLI case run in one child process: name -> its result (exit code, output, peak, seconds)."""
    work = tmp_path_factory.mktemp("hostile-runs")
    # a copy of the session's store: the train cases log their sweeps there, not where other tests read theirs
    store = work / "store"
    shutil.copytree(trained["home"], store)
    outputs = work / "out"
    outputs.mkdir()
    warm = work / "warm.jsonl"
    warm.write_text(json.dumps({"abstract": "Graph neural networks for molecules and proteins."}) + "\n")
    manifest = json.loads((corpus / "MANIFEST.json").read_text())
    jobs = [{"name": "warm-up", "args": ["label", str(warm), "-o", str(outputs / "warm.out.jsonl"), "--no-progress"]}]
    for case in LABEL:
        jobs.append(
            {
                "name": f"label {case}",
                "args": ["label", str(corpus / case), "-o", str(outputs / out_name(case, "label")), "--no-progress"],
            }
        )
        picks = outputs / out_name(case, "suggest").replace(".txt", ".csv" if case.endswith(".csv") else ".txt")
        jobs.append({"name": f"suggest {case}", "args": ["suggest", str(corpus / case), "-o", str(picks), "-n", "2"]})
    for case in TRAIN:
        jobs.append(
            {
                "name": f"train {case}",
                "args": ["train", "--data", str(corpus / case), "-c", "tfidf-word-cnb", "--no-register"],
            }
        )
    planted = manifest["planted_outputs"]
    jobs.append(
        {
            "name": "label planted",
            "args": ["label", str(corpus / "planted.jsonl"), "-o", str(corpus / planted["label"]), "--no-progress"],
        }
    )
    jobs.append(
        {
            "name": "suggest planted",
            "args": ["suggest", str(corpus / "planted.jsonl"), "-o", str(corpus / planted["suggest"]), "-n", "2"],
        }
    )
    (work / "jobs.json").write_text(json.dumps(jobs))
    before = digests(corpus)
    env = {
        **os.environ,
        "PAPERTRACK_MAX_INPUT_BYTES": str(MAX_INPUT_MIB << 20),
        "PAPERTRACK_HOME": str(store),
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.hostile_runner", str(work / "jobs.json"), str(work / "results.jsonl")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = {r["name"]: r for r in map(json.loads, (work / "results.jsonl").read_text().splitlines())}
    assert set(results) == {job["name"] for job in jobs}, "the runner stopped early"
    return {"results": results, "outputs": outputs, "before": before, "after": digests(corpus)}


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def check_bounds(result: dict, case: str) -> None:
    assert result["exception"] is None, result["exception"]
    assert "Traceback" not in result["output"]
    growth = result["peak_mib"] - result["before_mib"]
    assert growth <= GROWTH_MIB, f"{result['name']}: peak {result['peak_mib']} MiB, {growth} MiB over the start"
    ceiling = LINEAR_SECONDS if case == "spread-records.json" else SLOW_SECONDS.get(case, SECONDS)
    assert result["seconds"] <= ceiling, f"{result['name']}: {result['seconds']} s"


def check_fatal(result: dict, path: Path, expected: str) -> None:
    """One `error:` line, naming the file and (when the problem is a record) its line: `path:LINE: ...`."""
    (line,) = error_lines(result["output"])
    assert line.startswith(f"error: {path}"), line
    assert (f"{path}{expected}" if expected.startswith(":") else expected) in line, line


def read_rows(path: Path) -> list[tuple[int, str]]:
    return [(row["line"], row["kind"]) for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())]


@pytest.mark.parametrize("case", list(LABEL))
def test_label(runs, corpus, case):
    result = runs["results"][f"label {case}"]
    check_bounds(result, case)
    code, expected = LABEL[case]
    assert result["exit_code"] == code, result["output"][-2000:]
    out = runs["outputs"] / out_name(case, "label")
    if code == 2:
        check_fatal(result, corpus / case, expected)
        assert not out.exists()  # a file at the output path is always complete
        return
    assert not error_lines(result["output"]), result["output"][-2000:]
    errors = out.with_name(out.name.rsplit(".", 1)[0] + ".errors.jsonl")
    assert read_rows(errors) == file_lines(expected, corpus / case)
    assert all(row["source"] == str(corpus / case) for row in map(json.loads, errors.read_text().splitlines()))
    rows = out.read_text(encoding="utf-8").splitlines()
    labeled = len(rows) - (out.suffix == ".csv")  # the CSV's header line
    assert f"input records = {labeled:,} labeled rows" in " ".join(result["output"].split())


def test_label_csv_cells_cannot_start_a_formula(runs):
    with open(runs["outputs"] / out_name("csv-injection.csv", "label"), newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [row["id"] for row in rows] == ['\'=HYPERLINK("http://x","y")', "'+cmd", "'@SUM(A1)", "'-ok"]
    assert [row["title"] for row in rows][:3] == ["'=1+2", "'-2+3", "'@title"]
    assert rows[0]["label"] == "'=cmd · +run" and rows[2]["label"] == "'@area · -sub"
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row.values()), row


def test_suggest_csv_cells_cannot_start_a_formula(runs):
    with open(runs["outputs"] / "csv-injection.csv.suggest.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and all(row["id"].startswith("'") for row in rows)
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row.values()), row


@pytest.mark.parametrize("case", list(LABEL))
def test_suggest(runs, corpus, case):
    result = runs["results"][f"suggest {case}"]
    check_bounds(result, case)
    code, expected = LABEL[case]
    if code == 2:
        assert result["exit_code"] == 2, result["output"][-2000:]
        check_fatal(result, corpus / case, expected)
        return
    assert result["exit_code"] == 0, result["output"][-2000:]
    assert "Picked 2 of" in result["output"]
    if expected:  # the unusable records are counted, the first named
        first_line = next(line for line, kind in file_lines(expected, corpus / case) if kind != "header")
        assert f"cannot be used and are not in the pool (first: {corpus / case}:{first_line}:" in " ".join(
            result["output"].split()
        )


@pytest.mark.parametrize("case", list(TRAIN))
def test_train_refuses_before_any_fit(runs, corpus, case):
    result = runs["results"][f"train {case}"]
    check_bounds(result, case)
    assert result["exit_code"] == 2, result["output"][-2000:]
    check_fatal(result, corpus / case, TRAIN[case])
    assert "MLflow store" not in result["output"]  # refused before the store or any candidate


def test_planted_links_are_refused_and_their_target_untouched(runs, corpus):
    manifest = json.loads((corpus / "MANIFEST.json").read_text())
    for command, temporary in (("label", ".partial"), ("suggest", ".tmp")):
        result = runs["results"][f"{command} planted"]
        check_bounds(result, "planted.jsonl")
        assert result["exit_code"] == 2, result["output"]
        (line,) = error_lines(result["output"])
        link = corpus / (manifest["planted_outputs"][command] + temporary)
        assert line.startswith(f"error: {link} is a symbolic link"), line
        assert not (corpus / manifest["planted_outputs"][command]).exists()
    assert (corpus / manifest["victim"]).read_text() == "precious: must never be written through a planted link\n"


def test_nothing_is_written_over_an_input(runs):
    assert runs["after"] == runs["before"]
