"""The Spark session of a labeling job: its Python workers run this interpreter, local masters bind 127.0.0.1 with no
UI, and the JVM stays quiet (a failed job is reported as one line by papertrack)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from papertrack.errors import PapertrackError, UsageError
from papertrack.serving.model_loader import first_line

log = logging.getLogger(__name__)

DEFAULT_BATCH = 2_000  # spark.sql.execution.arrow.maxRecordsPerBatch (see BENCHMARKS.md "Spark batch labeling")

# local masters: the driver JVM is the executor, and a labeling job is short: the C1 JIT alone halves the JVM's
# CPU (the C2 compiler's threads cost more than they save here) — BENCHMARKS.md "Spark batch labeling"
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


class SparkJobError(PapertrackError):
    """The Spark job failed on the input (e.g. a Parquet file Spark cannot read)."""


class SparkJvmDied(SparkJobError):
    """The JVM of the Spark session (the driver; with a local master, the executors too) exited mid-job."""


# Spark's own exit statuses (org.apache.spark.util.SparkExitCode) that say what to do
_EXIT_STATUSES = {
    50: "an uncaught exception in the JVM",
    52: "out of memory: give the driver more, e.g. --spark-conf spark.driver.memory=4g",
    53: "Spark could not create its local directories (spark.local.dir)",
    56: "executor heartbeats timed out",
}


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
    # PySpark's accumulator server prints a traceback when the JVM's connection to it drops (the JVM died): the
    # job reports that in one line; the traceback is logged (--verbose shows it)
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = _log_accumulator_error
    return spark


class _Py4JRootRecords(logging.Filter):
    """Py4J logs a lost connection on the root logger (``logging.exception``: a traceback on the console, e.g.
    when the JVM died): such records go to papertrack's log at INFO instead (``--verbose`` shows them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if f"{os.sep}py4j{os.sep}" not in record.pathname:
            return True
        log.info("Py4J: %s", record.getMessage(), exc_info=record.exc_info)
        return False


@contextmanager
def py4j_errors_logged() -> Iterator[None]:
    """Inside the block, Py4J's root-logger records are papertrack's INFO records (:class:`_Py4JRootRecords`)."""
    root = logging.getLogger()
    quiet = _Py4JRootRecords()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


def _log_accumulator_error(request, client_address) -> None:
    log.info("PySpark's accumulator server lost the JVM's connection", exc_info=True)


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


def jvm_exit_status(wait: float = 0.0) -> int | None:
    """The exit status of the JVM this process started for Spark (``Popen.returncode``: negative for a signal),
    waiting up to ``wait`` seconds for it to end; None while it runs, or when this process did not start it
    (under spark-submit, the JVM started this process)."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is None:
        return None
    try:
        return process.wait(timeout=wait) if wait > 0 else process.poll()
    except subprocess.TimeoutExpired:
        return None


def exit_text(status: int) -> str:
    """How a JVM ended: ``-9`` -> "killed by signal 9 (SIGKILL, ...)", ``52`` -> "with exit status 52 (out of
    memory: ...)"."""
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "an unknown signal"
        hint = ", also what the kernel's out-of-memory killer sends" if -status == signal.SIGKILL else ""
        return f"killed by signal {-status} ({name}{hint})"
    known = _EXIT_STATUSES.get(status)
    return f"with exit status {status}" + (f" ({known})" if known else "")


def stop_session(spark) -> None:
    """Stop ``spark``; when its JVM has exited, forget it without calling it (no Py4J error at exit, and a later
    session in this process starts a new JVM)."""
    if jvm_exit_status() is None:
        try:
            spark.stop()
            return
        except Exception:
            if jvm_exit_status(wait=_JVM_EXIT_WAIT) is None:
                raise
    _forget_dead_jvm(spark)


_JVM_EXIT_WAIT = 5.0  # seconds a JVM that lost its SparkContext takes to exit (Spark's handler stops it first)


def _forget_dead_jvm(spark) -> None:
    """PySpark's handles on a JVM that exited, dropped (what ``SparkSession.stop`` does, without the JVM)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession, SQLContext

    context = spark.sparkContext
    context._jsc = None
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.shutdown()
        context._accumulatorServer = None
    with SparkContext._lock:
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    SQLContext._instantiatedContext = None
