"""Batch labeling on Spark: ``papertrack label DUMP... -o OUT --engine spark [--master URL]``.

The same rows as the local engine (:mod:`papertrack.serving.batch.labeler.run`), for dumps too large for one
process:

* Reading (:mod:`.inputs`). JSON lines (``.jsonl``/``.ndjson``, also ``.gz``) are split into lines and numbered by
  Spark on the JVM, range-partitioned by (file, line), and only then parsed on the executors by the project's own
  parser (``ingest.json_line_record``) — in parallel even for a ``.gz`` file, which Spark reads as one split.
  Parquet is read by Spark and each row goes through ``ingest.record_from_mapping`` (same field rules as
  JSON/CSV, ``line`` = row number in the file). Layouts that are not line-oriented — the text dumps, CSV
  (quoted fields span lines) and a JSON array — are parsed on the driver by ``ingest.iter_records`` first and
  handed to Spark through a Parquet file in ``OUT.partial`` written in bounded batches. The JVM never holds a
  line over the limit: JSON lines are scanned on the driver first, and a file with over-long lines is split
  by the driver (each long line a ``too-long`` error row, as the local engine has it).
* Labeling. ``mlflow.pyfunc.spark_udf`` of THE registered pyfunc (``env_manager="local"``: the executors'
  Python is this interpreter, :mod:`.session`), downloaded once by the one model loader
  (:func:`papertrack.serving.model_loader.load_model`) so the alias cannot move mid-job. The pyfunc
  answers with one JSON string per record (its ``output="json"`` param, ``result_type="string"``), which
  spares MLflow converting the nested answer value by value (a model logged before that param: the struct).
* Rows (:mod:`.rows`). Built on the executors by the labeler's own ``RowFormat`` / ``error_rows`` /
  ``Counters.add``: a JSONL part holds byte-for-byte the lines ``papertrack label`` writes; a Parquet part the
  same fields as columns.
* Output: a folder ``OUT`` (``.jsonl`` or ``.parquet``) with ``labels/part-*`` (in input order: part 0 first,
  rows by file then line), ``errors/part-*.jsonl`` (one row per record that could not be labeled, with the
  reason — never dropped), ``summary.json`` (``inputs = rows + errors`` is checked) and ``_SUCCESS``.
  Everything is written to ``OUT.partial`` first and renamed when complete; ``_SUCCESS`` comes last. A job
  that fails removes ``OUT.partial``: nothing incomplete is ever left looking complete. A JVM that dies mid-job
  is one ``SparkJvmDied`` line with its exit status or signal (the Py4J error is logged: ``-v``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from papertrack.errors import PapertrackError, UsageError
from papertrack.serving.batch.labeler import outputs
from papertrack.serving.batch.labeler.checkpoint import Paths, partial_path
from papertrack.serving.batch.labeler.label_errors import LabelError, ModelMissing
from papertrack.serving.batch.labeler.rows import SUMMARY_K, Counters
from papertrack.serving.batch.labeler.run import LabelResult
from papertrack.serving.batch.labeler.spark.arrow_rows import (
    PARQUET_ROW_SCHEMA,
    ROW_SCHEMA,
    errors_function,
    rows_function,
)
from papertrack.serving.batch.labeler.spark.inputs import ITEM_SCHEMA, input_format, parse_function, read_inputs
from papertrack.serving.batch.labeler.spark.session import (
    SparkJobError,
    SparkJvmDied,
    SparkOptions,
    exit_text,
    jvm_exit_status,
    py4j_errors_logged,
    spark_session,
    stop_session,
)
from papertrack.serving.model_loader import load_model
from papertrack.store import Store

log = logging.getLogger(__name__)

SUCCESS = "_SUCCESS"
SUMMARY = "summary.json"
SCRATCH = "driver-inputs"  # in OUT.partial: what the driver read, for the executors (removed before the rename)
DEFAULT_OPTIONS = SparkOptions()
JVM_EXIT_WAIT = 5.0  # seconds for a JVM that lost its connection or its SparkContext to exit (its status)


@dataclass
class SparkLabelResult(LabelResult):
    master: str = ""
    partitions: int = 0


def output_kind(output: Path) -> str:
    return outputs.output_kind(
        output,
        ("jsonl", "parquet"),
        "with --engine spark the output is a folder of partitions named *.jsonl or *.parquet",
        UsageError,
    )


def label_with_spark(
    inputs: Sequence[Path],
    output: Path,
    model_uri: str,
    store: Store | Callable[[], Store],
    *,
    top_k: int = 3,
    taxonomy: str | None = None,
    fmt: str | None = None,
    options: SparkOptions = DEFAULT_OPTIONS,
    notice: Callable[[str], None] = lambda message: None,
) -> SparkLabelResult:
    """Label every record of ``inputs`` into the folder ``output`` on Spark (see the module doc), with the model
    ``model_uri`` of ``store`` (a :class:`papertrack.store.Store`, or the function that opens it, called once the
    inputs are checked; its environment is given to the JVM the job starts)."""
    started = time.perf_counter()
    inputs = [Path(p) for p in inputs]
    if not inputs:
        raise LabelError("no input file")
    kind = output_kind(output)
    formats = [input_format(p, fmt) for p in inputs]  # IngestError up front: missing/unreadable/empty/corrupt
    store = store if isinstance(store, Store) else store()
    staging = partial_path(output)
    with (
        py4j_errors_logged(),
        tempfile.TemporaryDirectory(prefix="papertrack-spark-model-") as model_dir,
        ThreadPoolExecutor(1, thread_name_prefix="papertrack-spark-start") as pool,
    ):
        # the JVM starts while the driver downloads and checks the model (two processes: the wait overlaps)
        starting = pool.submit(_timed, spark_session, options, store.environment())
        try:
            predictor_info = _download_model(model_uri, store, Path(model_dir), taxonomy)
            if not 1 <= top_k <= predictor_info["n_labels"]:
                raise LabelError(
                    f"--top-k must be between 1 and {predictor_info['n_labels']} (the number of labels), got {top_k}"
                )
        except BaseException:
            if starting.exception() is None:
                stop_session(starting.result()[0])
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
            log.info("the Spark job failed", exc_info=exc)  # the whole Py4J/JVM error with --verbose
            status = jvm_exit_status(wait=JVM_EXIT_WAIT if _jvm_lost(exc) else 0)
            if status is not None:
                raise SparkJvmDied(
                    f"the Spark JVM died, {exit_text(status)}; nothing was written to {output} (-v shows Spark's error)"
                ) from None
            raise SparkJobError(f"the Spark job failed: {_job_error(exc)}") from None
        finally:
            stop_session(spark)
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


def _download_model(model_uri: str, store: Store, target: Path, taxonomy: str | None = None) -> dict:
    """Download the pyfunc once (the alias is resolved once) and read what the driver needs from it (in the asked
    taxonomy: an unknown one is a UsageError listing the known ones)."""
    loaded = load_model(model_uri, store, error=ModelMissing, download_to=target)
    predictor = loaded.predictor.head(taxonomy)
    return {
        "path": loaded.path,
        "n_labels": predictor.space.n_labels,
        "labels": frozenset(predictor.space.labels),
        "identity": predictor.card.identity(),
        "json_output": _has_param(loaded.metadata, "output"),
        "taxonomy": predictor.taxonomy,
    }


def _taxonomy_param(model: dict) -> dict[str, str]:
    return {"taxonomy": model["taxonomy"]} if model.get("taxonomy") else {}


def _has_param(metadata, name: str) -> bool:
    params = metadata.signature.params if metadata.signature else None
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
    """The job; ``timings`` gets the seconds of each step: read_on_driver (the JSON lines scanned, what the driver
    reads written for Spark), plan (the model's UDF), labels (read + parse + label + write: the work), errors,
    counts."""
    import mlflow.pyfunc
    from pyspark import StorageLevel
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from papertrack.models.artifact import OUTPUT_JSON

    step = _steps(timings)
    sources = [str(p) for p in inputs]
    scratch = staging / SCRATCH
    raw = read_inputs(spark, inputs, formats, scratch)
    step("read_on_driver")  # the JSON lines scanned for over-long lines, what the driver parses written for Spark
    partitions = options.partitions or spark.sparkContext.defaultParallelism
    # range-partitioned by (file, line) before parsing: the JSON lines are parsed in parallel even when they
    # come from one split (a .gz file), and the part files come out in input order
    items = (
        raw.repartitionByRange(partitions, "file", "line")
        .sortWithinPartitions("file", "line")
        .mapInArrow(parse_function(sources), ITEM_SCHEMA)
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
                params={"top_k": k, "output": OUTPUT_JSON, **_taxonomy_param(model)},
            )
        else:
            predict = mlflow.pyfunc.spark_udf(
                spark, model["path"], env_manager="local", params={"top_k": k, **_taxonomy_param(model)}
            )
    step("plan")
    good = items.where(F.col("kind").isNull())
    answered = good.withColumn("prediction", predict("abstract", "title"))
    # the rows' counts are collected while the rows are written (no second pass over them)
    row_counts = Observation("papertrack-rows")
    rows = (
        answered.drop("abstract")
        .mapInArrow(rows_function(sources, top_k, model["labels"]), ROW_SCHEMA)
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
    bad.mapInArrow(errors_function(sources), "row STRING").write.text(str(staging / "errors"))
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
    shutil.rmtree(scratch, ignore_errors=True)
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


def _rename_parts(folder: Path, old: str, new: str) -> None:
    """part-*.txt -> part-*.jsonl; Hadoop's .crc side files go (they would name the old files)."""
    for crc in folder.glob(".*.crc"):
        crc.unlink()
    for part in folder.glob(f"part-*{old}"):
        part.rename(part.with_name(part.name[: -len(old)] + new))


def _jvm_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the JVM may be going or gone: Py4J lost its connection, the gateway answered a call with
    an error but no Java exception (seen when the JVM is killed mid-call), or Spark shut the context down (what its
    handler of a fatal error, e.g. out of memory, does before the JVM exits)."""
    from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError

    if isinstance(exc, (Py4JNetworkError, ConnectionError)) or "SparkContext was shut down" in str(exc):
        return True
    return isinstance(exc, Py4JError) and not isinstance(exc, Py4JJavaError)


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
