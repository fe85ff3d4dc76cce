"""Batch labeling on Spark (local[2]): the same rows as `papertrack label` for the same inputs (JSONL read by
Spark, a text dump through the project's parser, Parquet), Parquet output, error rows never dropped,
input = output + errors, _SUCCESS only on a complete output, and bad input as one clear line."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("pyspark", reason="pip install -e '.[spark]' (pyspark) for the Spark labeling tests")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java 17: apt-get install -y openjdk-17-jre-headless", allow_module_level=True)

pytestmark = pytest.mark.slow

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
MASTER = "local[2]"
SPLIT_BYTES = 40_000  # the plain JSONL input (~270 kB) is read by Spark in several splits


def run_cli(*args: str):
    from papertrack.cli import app

    return CliRunner().invoke(app, ["label", *args, "--no-progress"])


def read_jsonl(paths) -> list[dict]:
    return [json.loads(line) for path in paths for line in Path(path).read_text(encoding="utf-8").splitlines()]


def parts(folder: Path, suffix: str) -> list[Path]:
    return sorted(folder.glob(f"part-*{suffix}"))


@pytest.fixture(scope="module")
def inputs(trained, data_dir, tmp_path_factory):
    """A gzipped JSONL with bad records mixed in, the labeled text dump (not line-oriented), and the same
    records as Parquet and as JSONL (the in-process labeler does not read Parquet)."""
    import pandas as pd

    folder = tmp_path_factory.mktemp("spark-inputs")
    lines = Path(trained["data"]).read_text(encoding="utf-8").splitlines()[:200]
    for position, line in sorted(
        {
            5: "{not valid json",
            17: json.dumps({"id": "empty-1", "abstract": "  "}),
            29: json.dumps(["an", "array"]),
            41: json.dumps({"id": "num-1", "abstract": 42}),
            53: json.dumps({"abstract": "A record without an id about graph neural networks."}),
            60: "",
        }.items(),
        reverse=True,
    ):
        lines.insert(position, line)
    mixed = folder / "mixed.jsonl.gz"
    mixed.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8")))
    plain = folder / "plain.jsonl"  # not compressed: Spark splits it (see SPLIT_BYTES), lines numbered across splits
    plain.write_text("\n".join(lines[100:] + lines[:100]) + "\n", encoding="utf-8")
    records = [json.loads(line) for line in Path(trained["data"]).read_text(encoding="utf-8").splitlines()[200:320]]
    records[7]["abstract"] = ""  # an empty abstract in Parquet is an error row too
    table = pd.DataFrame(
        [{"id": r.get("id"), "abstract": r["abstract"], "title": r.get("title"), "label": r["label"]} for r in records]
    )
    parquet = folder / "more.parquet"
    table.to_parquet(parquet, index=False)
    as_jsonl = folder / "more.jsonl"
    table.to_json(as_jsonl, orient="records", lines=True, force_ascii=False)
    return {
        "mixed": mixed,
        "text": data_dir / "samples" / "labeled_dump.txt",
        "parquet": parquet,
        "jsonl": as_jsonl,
        "plain": plain,
    }


@pytest.fixture(scope="module")
def spark_run(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("spark-out") / "labeled.jsonl"
    result = run_cli(
        str(inputs["mixed"]),
        str(inputs["text"]),
        str(inputs["parquet"]),
        str(inputs["plain"]),
        "-o",
        str(out),
        "--engine",
        "spark",
        "--master",
        MASTER,
        "--partitions",
        "3",
        "--spark-conf",
        f"spark.sql.files.maxPartitionBytes={SPLIT_BYTES}",
    )
    assert result.exit_code == 3, result.output  # bad records on purpose: exit status 3, as in process
    return out, result.output


@pytest.fixture(scope="module")
def local_run(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("local-out") / "labeled.jsonl"
    result = run_cli(
        str(inputs["mixed"]), str(inputs["text"]), str(inputs["jsonl"]), str(inputs["plain"]), "-o", str(out)
    )
    assert result.exit_code == 3, result.output  # the inputs hold bad records on purpose: exit status 3
    return out


def test_spark_rows_equal_the_in_process_labeler(spark_run, local_run, inputs):
    out, _ = spark_run
    assert (out / "_SUCCESS").exists() and not Path(str(out) + ".partial").exists()
    spark_rows = read_jsonl(parts(out / "labels", ".jsonl"))
    local_rows = read_jsonl([local_run])
    parquet_source = str(inputs["parquet"])
    for row in spark_rows:  # the same records, read from Parquet by Spark and from JSONL in process
        if row["source"] == parquet_source:
            row["source"] = str(inputs["jsonl"])
    # part files in order = input order (files in the order given, then line)
    assert [(r["source"], r["line"]) for r in spark_rows] == [(r["source"], r["line"]) for r in local_rows]
    assert [r["id"] for r in spark_rows] == [r["id"] for r in local_rows]
    assert len({r["source"] for r in spark_rows}) == 4
    for s, loc in zip(spark_rows, local_rows):
        assert [t["label"] for t in s["tracks"]] == [t["label"] for t in loc["tracks"]]
        assert all(abs(a["probability"] - b["probability"]) <= 1e-9 for a, b in zip(s["tracks"], loc["tracks"]))
        assert (s["area"], s["label"], s["in_top_k"], s["title"]) == (
            loc["area"],
            loc["label"],
            loc["in_top_k"],
            loc["title"],
        )
        assert abs(s["area_probability"] - loc["area_probability"]) <= 1e-9


def test_errors_are_rows_with_reasons_and_counts_add_up(spark_run, local_run, inputs):
    out, output = spark_run
    errors = read_jsonl(parts(out / "errors", ".jsonl"))
    local_errors = read_jsonl([local_run.with_name("labeled.errors.jsonl")])
    parquet_errors = [e for e in errors if e["source"] == str(inputs["parquet"])]
    assert [(e["line"], e["kind"], e["reason"]) for e in parquet_errors] == [(8, "empty", "empty abstract")]
    others = [e for e in errors if e["source"] != str(inputs["parquet"])]
    local_others = [e for e in local_errors if e["source"] != str(inputs["jsonl"])]
    assert others == local_others
    assert len([e for e in others if e["source"] == str(inputs["mixed"])]) == 4  # the four bad lines put in
    assert inputs["plain"].stat().st_size > 3 * SPLIT_BYTES  # so its line numbers above span several splits
    assert len([e for e in others if e["source"] == str(inputs["plain"])]) == 4
    assert {"invalid JSON", "not an object", "abstract is a number"} <= {
        k for e in others for k in ("invalid JSON", "not an object", "abstract is a number") if k in e["reason"]
    }
    summary = json.loads((out / "summary.json").read_text())
    c = summary["counters"]
    rows = read_jsonl(parts(out / "labels", ".jsonl"))
    assert c["inputs"] == c["rows"] + c["errors"] and c["rows"] == len(rows) and c["errors"] == len(errors)
    assert summary["master"] == MASTER and summary["partitions"] == 3
    assert len(parts(out / "labels", ".jsonl")) == 3
    assert f"{c['inputs']:,} input records = {c['rows']:,} labeled rows" in output
    headers = [e for e in errors if e["kind"] == "header"]  # the labeled sample dump opens with its page header
    assert c["headers"] == len(headers) == 1 and "of which 1 is a text dump's header paragraph" in " ".join(
        output.split()
    )
    assert c["labeled"] > 0 and 0 < c["top3"] <= c["labeled"]


def test_parquet_output_bad_parquet_no_complete_output_and_clear_errors(spark_run, inputs, trained, tmp_path):
    import pyarrow.parquet as pq

    # Parquet partitions: the same rows as the JSONL partitions, as columns
    out = tmp_path / "labeled.parquet"
    result = run_cli(str(inputs["mixed"]), "-o", str(out), "--engine", "spark", "--master", MASTER, "-k", "2")
    assert result.exit_code == 3, result.output  # its bad lines are error rows: exit status 3, as in process
    table = pq.read_table(out / "labels").to_pylist()
    jsonl_rows = [
        r for r in read_jsonl(parts(spark_run[0] / "labels", ".jsonl")) if r["source"] == str(inputs["mixed"])
    ]
    assert [r["id"] for r in table] == [r["id"] for r in jsonl_rows]
    assert all(len(r["tracks"]) == 2 and r["tracks"][0] == j["tracks"][0] for r, j in zip(table, jsonl_rows))

    # a Parquet file whose footer reads but whose data is broken fails inside the Spark job: one line,
    # and neither a complete-looking output nor a leftover partial folder
    broken = tmp_path / "broken.parquet"
    data = bytearray(inputs["parquet"].read_bytes())
    for i in range(8, len(data) // 2):
        data[i] = 0xFF
    broken.write_bytes(bytes(data))
    out2 = tmp_path / "broken-out.jsonl"
    result = run_cli(str(broken), "-o", str(out2), "--engine", "spark", "--master", MASTER)
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: the Spark job failed:") and "broken.parquet" in last, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 2
    assert not out2.exists() and not Path(str(out2) + ".partial").exists()


@pytest.mark.parametrize("case", ["missing", "directory", "corrupt-parquet", "empty", "missing-model", "csv-output"])
def test_bad_input_is_one_clear_line_and_no_output(case, trained, inputs, tmp_path):
    out = tmp_path / "out.jsonl"
    dump, model, expected = str(inputs["mixed"]), "models:/papertrack@champion", ""
    if case == "missing":
        dump, expected = str(tmp_path / "nope.jsonl"), "nope.jsonl: file not found"
    elif case == "directory":
        dump, expected = str(tmp_path), "not a regular file"
    elif case == "corrupt-parquet":
        bad = tmp_path / "bad.parquet"
        bad.write_bytes(b"PAR1 this is not parquet at all")
        dump, expected = str(bad), "bad.parquet: not a readable Parquet file"
    elif case == "empty":
        (tmp_path / "empty.jsonl").write_text("")
        dump, expected = str(tmp_path / "empty.jsonl"), "file is empty"
    elif case == "missing-model":
        # the local engine's message (one model loader): the aliases that exist
        model, expected = "models:/papertrack@nobody", "has no alias 'nobody'"
    elif case == "csv-output":
        out, expected = tmp_path / "out.csv", "*.jsonl or *.parquet"
    result = run_cli(dump, "-o", str(out), "--engine", "spark", "--master", MASTER, "--model", model)
    assert result.exit_code in (1, 2), result.output
    last = " ".join(result.output.strip().splitlines()[-1].split())  # after the "Labeling with ..." line
    assert last.startswith("error:") and expected in last, result.output
    assert "Traceback" not in result.output
    assert not out.exists() and not Path(str(out) + ".partial").exists()


def test_spark_only_options_are_refused_with_the_local_engine(trained, inputs, tmp_path):
    result = run_cli(str(inputs["mixed"]), "-o", str(tmp_path / "o.jsonl"), "--master", MASTER)
    assert result.exit_code == 2 and "--master, --partitions and --spark-conf need --engine spark" in " ".join(
        result.output.split()
    )
    result = run_cli(str(inputs["mixed"]), "-o", str(tmp_path / "o.jsonl"), "--engine", "spark", "--resume")
    assert result.exit_code == 2 and "--resume cannot be used with --engine spark" in " ".join(result.output.split())
