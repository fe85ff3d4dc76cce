"""The Spark session of a labeling job: its Python workers run this interpreter, local masters bind 127.0.0.1 with no
UI, and the JVM stays quiet (a failed job is reported as one line by papertrack)."""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from papertrack.errors import PapertrackError, UsageError
from papertrack.serving.model_loader import first_line

DEFAULT_BATCH = 2_000  # spark.sql.execution.arrow.maxRecordsPerBatch (see BENCHMARKS.md "Spark batch labeling")

# local masters: the driver JVM is the executor, and a labeling job is short: the C1 JIT alone halves the JVM's
# CPU (the C2 compiler's threads cost more than they save here) — BENCHMARKS.md "Spark batch labeling"
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


class SparkJobError(PapertrackError):
    """The Spark job failed on the input (e.g. a Parquet file Spark cannot read)."""


@dataclass(frozen=True)
class SparkOptions:
    master: str | None = None  # None: spark-submit's --master, else local[*]
    partitions: int | None = None  # None: the session's default parallelism
    batch: int = DEFAULT_BATCH  # records per Arrow batch sent to the Python workers
    conf: tuple[tuple[str, str], ...] = ()  # extra Spark settings (KEY, VALUE)


def spark_session(options: SparkOptions, environment: Mapping[str, str] | None = None):
    """A SparkSession whose Python workers run this interpreter; local masters bind 127.0.0.1 and no UI.
    ``environment``: more variables its JVM (and so its Python workers) starts with, e.g. the store's
    PAPERTRACK_HOME (a variable the user set wins)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise UsageError("--engine spark needs pyspark: pip install 'papertrack[spark]' (and Java 17)") from None
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    warnings.filterwarnings("ignore", message=r"Calling `spark_udf\(\)` with `env_manager=\"local\"`")
    builder = SparkSession.builder.appName("papertrack-label")
    local = options.master is None or options.master.startswith("local")
    if options.master:
        builder = builder.master(options.master)
    if local:
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
    # the JVM the session starts reads its settings from the environment it inherits: given for that start only
    launch_env = {**(environment or {}), **({"SPARK_LOCAL_IP": "127.0.0.1"} if local else {})}
    try:
        with _environment_defaults(launch_env):
            spark = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: no Java, bad master URL, ...
        raise SparkJobError(f"cannot start Spark (master {options.master or 'default'}): {first_line(exc)}") from None
    # the Python workers (UDFs, mapInArrow) run this interpreter, whatever PYSPARK_PYTHON says
    spark.sparkContext.pythonExec = sys.executable
    return spark


@contextmanager
def _environment_defaults(values: Mapping[str, str]) -> Iterator[None]:
    """``values`` in the environment where it has none of its own, for the ``with`` block only (the JVM that
    starts in it inherits them); the environment is as it was afterwards."""
    added = {key: value for key, value in values.items() if key not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


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
