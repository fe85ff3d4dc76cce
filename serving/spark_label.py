"""Batch labeling on Spark: ``papertrack label DUMP... -o OUT --engine spark [--master URL]``.

The same rows as the in-process labeler (``serving/labeler.py``), for dumps too large for one process:

* Reading. JSON lines (``.jsonl``/``.ndjson``, also ``.gz``) are split into lines and numbered by Spark on
  the JVM, range-partitioned by (file, line), and only then parsed on the executors by the project's own
  parser (``ingest.json_line_record``) — in parallel even for a ``.gz`` file, which Spark reads as one split.
  Parquet is read by Spark and each row goes through ``ingest.record_from_mapping`` (same field rules as
  JSON/CSV, ``line`` = row number in the file). Layouts that are not line-oriented — the text dumps, CSV
  (quoted fields span lines) and a JSON array — are parsed on the driver by ``ingest.iter_records`` first and
  handed to Spark.
* Labeling. ``mlflow.pyfunc.spark_udf`` of THE registered pyfunc (``env_manager="local"``: the executors'
  Python is this venv's, ``PYSPARK_PYTHON``), downloaded once so the alias cannot move mid-job. The pyfunc
  answers with one JSON string per record (its ``output="json"`` param, ``result_type="string"``), which
  spares MLflow converting the nested answer value by value (a model logged before that param: the struct).
* Rows. Built on the executors by the labeler's own ``RowFormat`` / ``error_rows`` / ``Counters.add``: a JSONL
  part holds byte-for-byte the lines ``papertrack label`` writes; a Parquet part the same fields as columns.
* Output: a folder ``OUT`` (``.jsonl`` or ``.parquet``) with ``labels/part-*`` (in input order: part 0 first,
  rows by file then line), ``errors/part-*.jsonl`` (one row per record that could not be labeled, with the
  reason — never dropped), ``summary.json`` (``inputs = rows + errors`` is checked) and ``_SUCCESS``.
  Everything is written to ``OUT.partial`` first and renamed when complete; ``_SUCCESS`` comes last. A job
  that fails removes ``OUT.partial``: nothing incomplete is ever left looking complete.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from papertrack.errors import PapertrackError, UsageError
from papertrack.features.ingest import BadRecord, IngestError, Record, detect_format, iter_records
from papertrack.serving.labeler import Counters, LabelError, LabelResult, ModelMissing, partial_path
from papertrack.serving.labeler.backends import _first_line, over_limits
from papertrack.serving.labeler.checkpoint import Paths
from papertrack.serving.labeler.rows import RowFormat, error_rows
from papertrack.serving.labeler.summary import SUMMARY_K

OUTPUT_KINDS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
PARQUET = "parquet"
DEFAULT_BATCH = 2_000  # spark.sql.execution.arrow.maxRecordsPerBatch (see BENCHMARKS.md "Spark batch labeling")
SUCCESS = "_SUCCESS"
# local masters: the driver JVM is the executor, and a labeling job is short: the C1 JIT alone halves the JVM's
# CPU (the C2 compiler's threads cost more than they save here) — BENCHMARKS.md "Spark batch labeling"
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
SUMMARY = "summary.json"

# one parsed input item: a record to label, or (kind set) one that cannot be labeled
ITEM_SCHEMA = "file INT, line LONG, id STRING, abstract STRING, title STRING, label STRING, kind STRING, reason STRING"
ROW_SCHEMA = "file INT, line LONG, row STRING, labeled INT, top1 INT, top3 INT, unknown INT"
PARQUET_ROW_SCHEMA = (
    "id STRING, source STRING, line LONG, title STRING, "
    "tracks ARRAY<STRUCT<label: STRING, probability: DOUBLE>>, area STRING, "
    "area_probability DOUBLE, label STRING, in_top_k BOOLEAN"
)


class SparkJobError(PapertrackError):
    """The Spark job failed on the input (e.g. a Parquet file Spark cannot read)."""


@dataclass(frozen=True)
class SparkOptions:
    master: str | None = None  # None: spark-submit's --master, else local[*]
    partitions: int | None = None  # None: the session's default parallelism
    batch: int = DEFAULT_BATCH  # records per Arrow batch sent to the Python workers
    conf: tuple[tuple[str, str], ...] = ()  # extra Spark settings (KEY, VALUE)


# --------------------------------------------------------------------------- the session


def spark_session(options: SparkOptions):
    """A SparkSession whose Python workers run this interpreter; local masters bind 127.0.0.1 and no UI."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise UsageError("--engine spark needs pyspark: pip install 'papertrack[spark]' (and Java 17)") from None
    os.environ["PYSPARK_PYTHON"] = sys.executable
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    warnings.filterwarnings("ignore", message=r"Calling `spark_udf\(\)` with `env_manager=\"local\"`")
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("papertrack-label")
    local = options.master is None or options.master.startswith("local")
    if options.master:
        builder = builder.master(options.master)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    for key, value in {
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={_quiet_log4j().as_uri()}"
        + (f" {LOCAL_JVM_OPTIONS}" if local else ""),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "FATAL",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(options.batch),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # our own _SUCCESS marks the whole output; Spark's per-folder markers would mark parts of it
        "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
        **({"spark.sql.shuffle.partitions": str(options.partitions)} if options.partitions else {}),
        **dict(options.conf),
    }.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: no Java, bad master URL, ...
        raise SparkJobError(f"cannot start Spark (master {options.master or 'default'}): {_first_line(exc)}") from None


def _quiet_log4j() -> Path:
    """A log4j2 configuration that keeps the JVM quiet: a failed job is reported as one line by papertrack
    (override with --spark-conf spark.driver.extraJavaOptions=... to see Spark's own logs)."""
    text = (
        "rootLogger.level = fatal\nrootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %p %c{1}: %m%n%ex\n"
    )
    path = Path(tempfile.gettempdir()) / "papertrack-spark-log4j2.properties"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- inputs


def input_format(path: Path, fmt: str | None) -> str:
    """The project's format of ``path`` or "parquet" (by extension, or ``--format parquet``); IngestError when
    the file is missing, unreadable, empty, of an unknown layout, or not a readable Parquet file."""
    if fmt == PARQUET or (fmt is None and path.suffix.lower() == ".parquet"):
        _check_parquet(path)
        return PARQUET
    return detect_format(path, fmt)


def _check_parquet(path: Path) -> None:
    import pyarrow.parquet as pq

    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise IngestError(path, None, "file not found") from None
    except OSError as exc:
        raise IngestError(path, None, f"cannot open file: {exc.strerror}") from None
    try:
        schema = pq.ParquetFile(path).schema_arrow
    except Exception as exc:  # pyarrow raises ArrowInvalid/OSError for a truncated or non-Parquet file
        raise IngestError(path, None, f"not a readable Parquet file ({_first_line(exc)})") from None
    if "abstract" not in {name.strip().lower() for name in schema.names}:
        raise IngestError(path, None, f"no 'abstract' column (columns: {', '.join(schema.names)})")


def _read_jsonl(spark, index: int, path: Path):
    """Lines split by Spark's text reader (Hadoop's: .gz by extension, a plain file in several splits) and
    numbered in file order, all on the JVM; they are parsed after partitioning (``_parse_function``)."""
    from pyspark.sql import functions as F

    # the raw bytes of each line (a line that is not UTF-8 is an error row, not silently replaced), its split
    # and its position: monotonically_increasing_id() = (split << 33) + position in the split
    lines = spark.read.text(path.resolve().as_uri()).select(
        F.col("value").cast("binary").alias("data"),
        F.spark_partition_id().alias("split"),
        F.monotonically_increasing_id().alias("position"),
    )
    # Hadoop reads a .gz file as one split (gzip cannot be split; _plain_or_gz checked it is gzip)
    offsets = [0] if path.name.lower().endswith(".gz") else _split_offsets(lines)
    line = F.col("position") - F.shiftleft(F.col("split").cast("long"), 33) + 1
    if any(offsets):  # lines in the splits before this one (a .gz file is one split: none)
        line = line + F.element_at(F.array(*[F.lit(o) for o in offsets]), F.col("split") + 1)
    return lines.select(
        F.lit(index).cast("int").alias("file"),
        line.alias("line"),
        "data",
        *[F.lit(None).cast("string").alias(name) for name in _ITEM_NAMES[2:]],
    )


def _split_offsets(lines) -> list[int]:
    """For each split of a text file, the number of lines in the splits before it (one counting pass on the
    JVM)."""
    from pyspark.sql import functions as F

    counts = dict(lines.groupBy("split").agg(F.count("*").alias("n")).collect())
    offsets, total = [], 0
    for split in range(max(counts, default=0) + 1):
        offsets.append(total)
        total += counts.get(split, 0)
    return offsets


def _read_parquet(spark, index: int, path: Path):
    """Parquet rows through the project's field rules (on the executors, as Spark reads them); line = row
    number in the file."""
    from pyspark.sql import functions as F

    from papertrack.features.ingest import record_from_mapping

    source = str(path)
    frame = spark.read.parquet(path.resolve().as_uri())
    wanted = {"id", "abstract", "title", "label", "topic", "area", "subarea"}
    columns = [c for c in frame.columns if c.strip().lower() in wanted]
    frame = frame.select(*[F.col(f"`{c}`") for c in columns], F.col("_metadata.row_index").alias("_row_index"))

    def parse(batches):
        for batch in batches:
            items = []
            for fields in batch.to_pylist():
                line = fields.pop("_row_index") + 1
                items.extend(_item_tuple(index, record_from_mapping(fields, source, line, None)))
            yield _arrow_batch(items, raw=True)

    return frame.mapInArrow(parse, RAW_SCHEMA)


def _read_on_driver(spark, index: int, path: Path, fmt: str):
    """Layouts that are not line-oriented: the project's parser on the driver, then handed to Spark."""
    items = [t for item in iter_records(path, fmt, labeled=None) for t in _item_tuple(index, item)]
    return spark.createDataFrame([_raw(t) for t in items], RAW_SCHEMA)


def _parse_function(sources: list[str]):
    """mapInArrow RAW_SCHEMA -> ITEM_SCHEMA: JSON lines (``data`` set) through the project's parser, rows
    parsed already (Parquet, the driver's layouts) as they are."""

    def parse(batches):
        from papertrack.features.ingest import json_line_record

        for batch in batches:
            items = []
            for raw in zip(*(batch.column(name).to_pylist() for name in _RAW_NAMES)):
                index, line, data = raw[:3]
                if data is None:
                    items.append(raw[:2] + raw[3:])
                else:
                    items.extend(_item_tuple(index, json_line_record(data, sources[index], line)))
            yield _arrow_batch(items)

    return parse


_ITEM_NAMES = ("file", "line", "id", "abstract", "title", "label", "kind", "reason")
_RAW_NAMES = ("file", "line", "data", *_ITEM_NAMES[2:])
# one input item before parsing: a JSON line's bytes (``data``), or an item parsed already (``data`` null)
RAW_SCHEMA = "file INT, line LONG, data BINARY, " + ITEM_SCHEMA.removeprefix("file INT, line LONG, ")


def _raw(item: tuple) -> tuple:
    return item[:2] + (None,) + item[2:]


def _arrow_batch(items: list[tuple], raw: bool = False):
    """ITEM_SCHEMA tuples as one Arrow record batch (of RAW_SCHEMA, with no ``data``, when ``raw``)."""
    import pyarrow as pa

    fields = [("file", pa.int32()), ("line", pa.int64()), *[(n, pa.string()) for n in _ITEM_NAMES[2:]]]
    if raw:
        items = [_raw(t) for t in items]
        fields.insert(2, ("data", pa.binary()))
    schema = pa.schema(fields)
    columns = list(zip(*items)) if items else [[] for _ in fields]
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)


def _item_tuple(index: int, item: Record | BadRecord | None) -> list[tuple]:
    """The ITEM_SCHEMA row of a parsed item; a record over the service's size limits is rejected here, as the
    in-process labeler rejects it."""
    if item is None:
        return []
    if isinstance(item, BadRecord):
        return [(index, item.line, item.id, None, None, None, item.kind, item.reason)]
    too_big = over_limits(item)
    if too_big is not None:
        return [(index, item.line, item.id, None, None, None, "rejected", too_big)]
    return [(index, item.line, item.id, item.abstract, item.title, item.label, None, None)]


# --------------------------------------------------------------------------- rows


def _rows_function(sources: list[str], top_k: int, known: frozenset[str]):
    """mapInArrow: (items + the pyfunc's answer) -> the labeler's JSONL row and its summary counts."""

    def rows(batches):
        import pyarrow as pa

        formatter = RowFormat("jsonl", top_k)
        for batch in batches:
            out = {name: [] for name in ("file", "line", "row", "labeled", "top1", "top3", "unknown")}
            for item in batch.to_pylist():
                record = Record(
                    item["id"],
                    "",
                    item["title"],
                    item["label"],
                    None,
                    None,  # a row has no abstract
                    sources[item["file"]],
                    item["line"],
                )
                answer = _answer(item["prediction"])
                counts = Counters()
                counts.add(record, answer, known)
                out["file"].append(item["file"])
                out["line"].append(item["line"])
                out["row"].append(formatter.rows([(record, answer)]).decode("utf-8").rstrip("\n"))
                for name, value in (
                    ("labeled", counts.labeled),
                    ("top1", counts.top1),
                    ("top3", counts.top3),
                    ("unknown", counts.unknown_labels),
                ):
                    out[name].append(int(value))
            yield pa.RecordBatch.from_pydict(
                out,
                schema=pa.schema(
                    [
                        ("file", pa.int32()),
                        ("line", pa.int64()),
                        ("row", pa.string()),
                        *[(n, pa.int32()) for n in ("labeled", "top1", "top3", "unknown")],
                    ]
                ),
            )

    return rows


def _answer(prediction: str | dict) -> dict:
    """The pyfunc's answer for one record as the in-process labeler has it: a JSON object (``output="json"``),
    or, from a model logged before that option, the struct of the signature's columns whose optional outputs
    (prediction_set, confident) are null when the model has none — the in-process answer has no such keys."""
    if isinstance(prediction, str):
        return json.loads(prediction)
    return {key: value for key, value in prediction.items() if value is not None or key in ("tracks", "areas")}


def _errors_function(sources: list[str]):
    def errors(batches):
        import pyarrow as pa

        for batch in batches:
            items = [
                (BadRecord(sources[i["file"]], i["line"], i["reason"], i["id"], i["kind"]), i["kind"], i["reason"])
                for i in batch.to_pylist()
            ]
            text = error_rows(items).decode("utf-8")
            yield pa.RecordBatch.from_pydict({"row": text.splitlines()}, schema=pa.schema([("row", pa.string())]))

    return errors


# --------------------------------------------------------------------------- the job


@dataclass
class SparkLabelResult(LabelResult):
    master: str = ""
    partitions: int = 0


def output_kind(output: Path) -> str:
    kind = OUTPUT_KINDS.get(output.suffix.lower())
    if kind is None:
        raise UsageError(
            f"{output}: with --engine spark the output is a folder of partitions named *.jsonl or *.parquet"
        )
    return kind


def label_with_spark(
    inputs: Sequence[Path],
    output: Path,
    model_uri: str,
    *,
    top_k: int = 3,
    fmt: str | None = None,
    options: SparkOptions = SparkOptions(),
    notice: Callable[[str], None] = lambda message: None,
) -> SparkLabelResult:
    """Label every record of ``inputs`` into the folder ``output`` on Spark (see the module doc)."""
    started = time.perf_counter()
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    inputs = [Path(p) for p in inputs]
    if not inputs:
        raise LabelError("no input file")
    kind = output_kind(output)
    formats = [input_format(p, fmt) for p in inputs]  # IngestError up front: missing/unreadable/empty/corrupt
    staging = partial_path(output)
    with (
        tempfile.TemporaryDirectory(prefix="papertrack-spark-model-") as model_dir,
        ThreadPoolExecutor(1, thread_name_prefix="papertrack-spark-start") as pool,
    ):
        # the JVM starts while the driver downloads and checks the model (two processes: the wait overlaps)
        starting = pool.submit(_timed, spark_session, options)
        try:
            predictor_info = _download_model(model_uri, Path(model_dir))
            if not 1 <= top_k <= predictor_info["n_labels"]:
                raise LabelError(
                    f"--top-k must be between 1 and {predictor_info['n_labels']} (the number of labels), got {top_k}"
                )
        except BaseException:
            if starting.exception() is None:
                starting.result()[0].stop()
            raise
        spark, seconds = starting.result()
        timings = {"spark_start": seconds}
        if staging.exists():
            notice(f"discarding the unfinished run in {staging}")
            shutil.rmtree(staging)
        try:
            job_started = time.perf_counter()
            counters, partitions = _run(spark, inputs, formats, staging, kind, predictor_info, top_k, options, timings)
            timings["job"] = round(time.perf_counter() - job_started, 3)
            summary = {
                "inputs": [str(p) for p in inputs],
                "formats": formats,
                "output": str(output),
                "kind": kind,
                "top_k": top_k,
                "model_uri": model_uri,
                "model": predictor_info["identity"],
                "master": spark.sparkContext.master,
                "partitions": partitions,
                "counters": asdict(counters),
                "seconds": round(time.perf_counter() - started, 3),
                "timings": timings,
                "arrow_batch": spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch"),
            }
            (staging / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
            if output.exists():
                shutil.rmtree(output) if output.is_dir() else output.unlink()
            os.replace(staging, output)
            (output / SUCCESS).write_text("", encoding="utf-8")  # last: the folder is complete
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, PapertrackError) or not isinstance(exc, Exception):
                raise
            raise SparkJobError(f"the Spark job failed: {_job_error(exc)}") from None
        finally:
            spark.stop()
    paths = Paths(output / "labels", output / "errors")
    return SparkLabelResult(
        counters,
        paths,
        time.perf_counter() - started,
        0,
        [str(p) for p in inputs],
        master=summary["master"],
        partitions=partitions,
    )


def _timed(function, *args):
    started = time.perf_counter()
    return function(*args), round(time.perf_counter() - started, 3)


def _download_model(model_uri: str, target: Path) -> dict:
    """Download the pyfunc once (the alias is resolved once) and read what the driver needs from it."""
    from mlflow.artifacts import download_artifacts
    from mlflow.exceptions import MlflowException

    from papertrack import store
    from papertrack.models.artifact import load_predictor
    from papertrack.serving.store import TRAIN_HINT

    tracking_uri = store.configure()
    try:
        local = download_artifacts(artifact_uri=model_uri, dst_path=str(target))
        predictor, pyfunc = load_predictor(local)
    except (MlflowException, OSError) as exc:
        raise ModelMissing(
            f"cannot load {model_uri} from {tracking_uri}: {_first_line(exc)}. {TRAIN_HINT} (or pass --model)."
        ) from None
    return {
        "path": local,
        "n_labels": predictor.space.n_labels,
        "labels": frozenset(predictor.space.labels),
        "identity": predictor.card.identity(),
        "json_output": _has_param(pyfunc, "output"),
    }


def _has_param(pyfunc, name: str) -> bool:
    params = pyfunc.metadata.signature.params if pyfunc.metadata.signature else None
    return params is not None and any(spec.name == name for spec in params.params)


def _run(
    spark,
    inputs: list[Path],
    formats: list[str],
    staging: Path,
    kind: str,
    model: dict,
    top_k: int,
    options: SparkOptions,
    timings: dict[str, float],
) -> tuple[Counters, int]:
    """The job; ``timings`` gets the seconds of each step: plan (reading the inputs' layout, the model's UDF),
    labels (read + parse + label + write: the work), errors, counts."""
    import mlflow.pyfunc
    from pyspark import StorageLevel
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from papertrack.models.artifact import OUTPUT_JSON

    step = _steps(timings)
    sources = [str(p) for p in inputs]
    frames = []
    for index, (path, fmt) in enumerate(zip(inputs, formats)):
        if fmt == "jsonl" and _plain_or_gz(path):
            frames.append(_read_jsonl(spark, index, path))
        elif fmt == PARQUET:
            frames.append(_read_parquet(spark, index, path))
        else:
            frames.append(_read_on_driver(spark, index, path, fmt))
    raw = frames[0]
    for frame in frames[1:]:
        raw = raw.unionByName(frame)
    partitions = options.partitions or spark.sparkContext.defaultParallelism
    # range-partitioned by (file, line) before parsing: the JSON lines are parsed in parallel even when they
    # come from one split (a .gz file), and the part files come out in input order
    items = (
        raw.repartitionByRange(partitions, "file", "line")
        .sortWithinPartitions("file", "line")
        .mapInArrow(_parse_function(sources), ITEM_SCHEMA)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )

    k = min(max(top_k, SUMMARY_K), model["n_labels"])
    with _quiet_logger("mlflow"):  # its advice to use conda instead of this very environment
        if model["json_output"]:  # one JSON string per answer: no value-by-value conversion of nested columns
            predict = mlflow.pyfunc.spark_udf(
                spark,
                model["path"],
                env_manager="local",
                result_type="string",
                params={"top_k": k, "output": OUTPUT_JSON},
            )
        else:
            predict = mlflow.pyfunc.spark_udf(spark, model["path"], env_manager="local", params={"top_k": k})
    step("plan")
    good = items.where(F.col("kind").isNull())
    answered = good.withColumn("prediction", predict("abstract", "title"))
    # the rows' counts are collected while the rows are written (no second pass over them)
    row_counts = Observation("papertrack-rows")
    rows = (
        answered.drop("abstract")
        .mapInArrow(_rows_function(sources, top_k, model["labels"]), ROW_SCHEMA)
        .observe(
            row_counts,
            F.count(F.lit(1)).alias("rows"),
            *[F.sum(c).alias(c) for c in ("labeled", "top1", "top3", "unknown")],
        )
    )
    if kind == "jsonl":
        rows.select("row").write.text(str(staging / "labels"))
        _rename_parts(staging / "labels", ".txt", ".jsonl")
    else:
        rows.select(F.from_json("row", PARQUET_ROW_SCHEMA).alias("r")).select("r.*").write.parquet(
            str(staging / "labels")
        )
        _rename_parts(staging / "labels", ".parquet", ".parquet")
    step("labels")
    # the cached items are range-partitioned and sorted by (file, line): one partition, in order, no shuffle
    bad = items.where(F.col("kind").isNotNull()).coalesce(1)
    bad.mapInArrow(_errors_function(sources), "row STRING").write.text(str(staging / "errors"))
    _rename_parts(staging / "errors", ".txt", ".jsonl")
    step("errors")

    # one pass over the cached inputs: how many, how many errors (inputs with a kind), duplicate ids
    totals = row_counts.get
    seen = items.agg(
        F.count("*").alias("inputs"),
        F.count("kind").alias("errors"),
        F.count(F.when(F.col("kind") == "header", 1)).alias("headers"),
        F.count("id").alias("ids"),
        F.countDistinct("id").alias("distinct"),
    ).collect()[0]
    counters = Counters(
        inputs=seen["inputs"],
        rows=totals["rows"],
        errors=seen["errors"],
        labeled=totals["labeled"] or 0,
        top1=totals["top1"] or 0,
        top3=totals["top3"] or 0,
        unknown_labels=totals["unknown"] or 0,
        duplicate_ids=seen["ids"] - seen["distinct"],
        headers=seen["headers"],
    )
    items.unpersist()
    step("counts")
    if counters.inputs != counters.rows + counters.errors:  # pragma: no cover - a bug, never data
        raise LabelError(f"count mismatch: {counters.inputs} inputs != {counters.rows} rows + {counters.errors} errors")
    return counters, partitions


def _steps(timings: dict[str, float]) -> Callable[[str], None]:
    """``step(name)`` records the seconds since the previous step (or since this call) under ``name``."""
    last = [time.perf_counter()]

    def step(name: str) -> None:
        now = time.perf_counter()
        timings[name] = round(now - last[0], 3)
        last[0] = now

    return step


@contextmanager
def _quiet_logger(name: str):
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _plain_or_gz(path: Path) -> bool:
    """Hadoop decompresses by extension: a gzip file not named .gz (or a .gz that is not gzip) goes through
    the driver's parser, which recognises gzip by its magic bytes."""
    with open(path, "rb") as f:
        is_gzip = f.read(2) == b"\x1f\x8b"
    return is_gzip == path.name.lower().endswith(".gz")


def _rename_parts(folder: Path, old: str, new: str) -> None:
    """part-*.txt -> part-*.jsonl; Hadoop's .crc side files go (they would name the old files)."""
    for crc in folder.glob(".*.crc"):
        crc.unlink()
    for part in folder.glob(f"part-*{old}"):
        part.rename(part.with_name(part.name[: -len(old)] + new))


def _job_error(exc: BaseException) -> str:
    """The one informative line of a Spark/Py4J failure: the exception raised in a Python worker when there
    is one (the last ``Name: message`` line of its traceback), else Spark's own message without its
    class-name prefixes."""
    text = str(exc).split("JVM stacktrace:")[0]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if any(line.startswith("Traceback (most recent call last)") for line in lines):
        raised = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line)]
        if raised:
            return f"in a Python worker: {raised[-1]}"[:400]
    lines = [line for line in lines if not line.startswith("An error occurred while calling")]  # Py4J's own
    line = lines[0] if lines else type(exc).__name__
    for prefix in (":", "org.apache.spark.SparkException:", "Job aborted due to stage failure:"):
        line = line.removeprefix(prefix).strip()
    return line[:400]
