"""``papertrack label``: every abstract of one or more dumps -> one output row, in input order; the local engine
(this process, or a running service with ``--url``) with its progress bar, or the Spark engine."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from papertrack import settings
from papertrack.cli_options import AbstractColumn, IdColumn, TitleColumn
from papertrack.console import err_console
from papertrack.errors import UsageError
from papertrack.features.ingest import FORMATS
from papertrack.features.ingest.stdin_copy import exits_on_sigterm
from papertrack.serving.command_output import error, note, say, status


class _RateColumn(ProgressColumn):
    """Records done and records per second."""

    def render(self, task) -> Text:
        records = task.fields.get("records", 0)
        elapsed = task.elapsed or 0
        rate = (records - task.fields.get("skipped", 0)) / elapsed if elapsed > 0 else 0
        return Text(f"{records:,} abstracts · {rate:,.0f}/s", style="progress.data.speed")


@exits_on_sigterm  # the copy of standard input (-) is removed on SIGTERM too
def label(
    dumps: Annotated[
        list[Path],
        typer.Argument(
            help="Input file(s): JSONL/JSON/CSV or text dumps, optionally .gz; - reads standard input.",
            show_default=False,
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output file: .jsonl or .csv.")],
    top_k: Annotated[
        int | None,
        typer.Option(
            "--top-k", "-k", min=1, help="Tracks per abstract [default: 3, or every label of a smaller taxonomy]"
        ),
    ] = None,
    taxonomy: Annotated[
        str | None,
        typer.Option(
            "--taxonomy",
            "-t",
            help="The taxonomy to answer in, e.g. 'ICML 2025' (papertrack taxonomies lists them). Default: the "
            "model's default taxonomy.",
        ),
    ] = None,
    model: Annotated[
        str, typer.Option("--model", "-m", help="MLflow model URI (local labeling).")
    ] = f"models:/{settings.MODEL_NAME}@{settings.CHAMPION}",
    url: Annotated[
        str | None,
        typer.Option(
            help="Label through a running service (e.g. http://127.0.0.1:3000) instead of loading the model here."
        ),
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run with the same inputs and options.")] = False,
    fmt: Annotated[str | None, typer.Option("--format", help=f"Force the input format: {', '.join(FORMATS)}.")] = None,
    errors: Annotated[Path | None, typer.Option(help="Errors file (default: OUTPUT with .errors.jsonl).")] = None,
    chunk_size: Annotated[int, typer.Option(min=1, help="Records labeled per step (and per checkpoint).")] = 2000,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Processes that label (local model): 1 labels in this process; default: one per core, at most 2 "
            "(an input of one chunk is labeled in this process).",
            show_default=False,
        ),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    engine: Annotated[
        str,
        typer.Option(
            help="local: this process; spark: a Spark job (output: a folder of "
            "partitions OUT.jsonl/ or OUT.parquet/; needs the [spark] extra)."
        ),
    ] = "local",
    master: Annotated[
        str | None,
        typer.Option(help="Spark master: local[2], spark://HOST:7077, ... (default: spark-submit's, else local[*])."),
    ] = None,
    partitions: Annotated[
        int | None, typer.Option(min=1, help="Spark partitions to label in (default: the cores Spark has).")
    ] = None,
    spark_conf: Annotated[
        list[str] | None,
        typer.Option("--spark-conf", help="A Spark setting KEY=VALUE (repeatable), e.g. spark.executor.memory=4g."),
    ] = None,
    abstract_column: AbstractColumn = None,
    title_column: TitleColumn = None,
    id_column: IdColumn = None,
) -> None:
    """Label every abstract of the dump(s): one output row per input record, in input order.

    Exit status: 0 all labeled; 3 finished, some records in the errors file; 2 bad input/options; 1 no model
    or a labeling worker died (rerun with --resume).
    """
    from papertrack.features.ingest import IngestError, expand_stdin, is_stdin
    from papertrack.features.ingest.columns import check_inputs
    from papertrack.serving.batch.labeler import LabelError
    from papertrack.serving.batch.labeler.run import claim_outputs, plan_run

    if engine not in ("local", "spark"):
        raise UsageError(f"--engine must be local or spark, got {engine!r}")
    if engine == "spark" and (abstract_column or title_column or id_column):
        raise UsageError("--abstract-column, --title-column and --id-column are for --engine local")
    if engine == "spark":
        from papertrack.serving.batch.labeler.spark import SparkOptions, label_with_spark

        unsupported = [
            name
            for name, given in (("--url", url), ("--resume", resume), ("--errors", errors), ("--workers", workers))
            if given
        ]
        conf = [tuple(item.split("=", 1)) for item in spark_conf or []]
        if any(len(pair) != 2 or not pair[0] for pair in conf):
            raise UsageError(f"--spark-conf takes KEY=VALUE, got {spark_conf}")
        if unsupported:
            raise UsageError(f"{', '.join(unsupported)} cannot be used with --engine spark (errors go to OUT/errors/)")
        status(f"Labeling with {model} on Spark (master {master or 'default'})")
        result = label_with_spark(
            dumps,
            output,
            model,
            _store,
            top_k=top_k or 3,
            taxonomy=taxonomy,
            fmt=fmt,
            notice=note,
            options=SparkOptions(master=master, partitions=partitions, conf=tuple(conf)),
        )
        _print_summary(result)
        _exit_when_records_failed(result)
        return
    if master or partitions or spark_conf:
        raise UsageError("--master, --partitions and --spark-conf need --engine spark")
    if url and workers is not None:
        raise UsageError("--workers is for labeling with the model here; with --url the service's workers label")
    if resume and any(is_stdin(p) for p in dumps):
        raise UsageError(
            "--resume cannot continue a run that read standard input (-): save the input to a file and label that file"
        )
    dumps = expand_stdin(dumps)
    # every argument is checked, and the output claimed, before the model loads (seconds)
    try:
        check_inputs(dumps, fmt)  # a CSV without its abstract column: now, not after the model loaded
        plan = plan_run(dumps, output, errors=errors, fmt=fmt)
    except (IngestError, LabelError) as exc:
        error(exc)
        _note_older_output(output, dumps)
        raise typer.Exit(2) from None
    with claim_outputs(plan.paths):
        result, backend = _run_labeler(
            dumps,
            output,
            model,
            url,
            top_k=top_k,
            taxonomy=taxonomy,
            fmt=fmt,
            errors=errors,
            resume=resume,
            chunk_size=chunk_size,
            workers=workers,
            progress=progress,
        )
        _print_summary(result)
        if result.counters.labeled:
            _note_training_overlap(getattr(backend, "predictor", None), dumps, fmt)
        from papertrack.serving.batch.drift_report import report_run

        service = backend if url else None  # with --url: the service's POST /drift
        report_run(
            getattr(backend, "predictor", None),
            result.paths.output,
            dumps,
            fmt=fmt,
            say=say,
            note=note,
            service=service,
        )
    _exit_when_records_failed(result)


def _exit_when_records_failed(result) -> None:
    """Exit status 3 when records could not be labeled (a text dump's header paragraph does not count), on both
    engines."""
    failed = result.counters.errors - result.counters.headers
    if failed:
        note(f"{failed:,} record(s) could not be labeled (reasons in {result.paths.errors}); exit status 3")
        raise typer.Exit(3)


def _run_labeler(dumps, output, model, url, *, top_k, taxonomy, fmt, errors, resume, chunk_size, workers, progress):
    """The local engine's run (the model here, or a service with --url), with its progress bar:
    (LabelResult, backend)."""
    from papertrack.features.ingest import IngestError
    from papertrack.models.request import resolve_top_k
    from papertrack.serving.batch.labeler import HttpBackend, LabelError, LocalBackend, label_dumps, partial_path
    from papertrack.serving.batch.labeler.label_errors import WorkerDied
    from papertrack.serving.batch.labeler.run import default_workers

    backend = HttpBackend(url, taxonomy=taxonomy) if url else LocalBackend(model, taxonomy, store=_store)
    status(f"Labeling with {backend.description}")
    if top_k is None:
        top_k = resolve_top_k(None, backend.n_labels)
        if top_k < 3:
            note(f"the model knows {backend.n_labels} labels: answering with --top-k {top_k} instead of 3")
    # Everything loaded so far (libraries, the model) lives until the end: keep it out of the cyclic GC's
    # scans, which otherwise take a large share of the per-chunk work.
    gc.freeze()
    bar = Progress(
        TextColumn("labeling"),
        BarColumn(),
        TaskProgressColumn(),
        _RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err_console,
        disable=not progress,
        transient=False,
    )
    task = None

    def on_start(skipped):
        nonlocal task
        task = bar.add_task("labeling", total=None, records=skipped, skipped=skipped)

    def on_total(lines):
        bar.update(task, total=lines)

    def on_chunk(records, lines_done):
        bar.update(task, completed=lines_done, records=bar.tasks[0].fields["records"] + records)

    try:
        with bar:
            result = label_dumps(
                dumps,
                output,
                backend,
                top_k=top_k,
                fmt=fmt,
                errors=errors,
                resume=resume,
                chunk_size=chunk_size,
                workers=default_workers(backend) if workers is None else workers,
                on_start=on_start,
                on_total=on_total,
                on_chunk=on_chunk,
                notice=note,
            )
    except WorkerDied as exc:
        error(f"{exc}")
        raise typer.Exit(1) from None
    except (IngestError, LabelError) as exc:
        error(f"{exc}")
        if partial_path(output).exists():
            note(
                "the rows labeled so far are kept in the .partial file; fix the problem and rerun "
                "(--resume only if the input is unchanged)."
            )
        _note_older_output(output, dumps)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        note("interrupted: the rows written so far are kept; rerun with --resume to continue.")
        raise typer.Exit(130) from None
    finally:
        backend.close()
    return result, backend


def training_overlap(predictor, dumps, fmt: str | None) -> tuple[int, int]:
    """(labeled records of the dumps that are in the model's training data, labeled records): read from the
    model's neighbour index (the abstracts it was refit on). (0, n) when the model has no index."""
    from papertrack.features.ingest import Record, iter_records

    index = getattr(predictor, "neighbors", None)
    seen = labeled = 0
    for dump in dumps:
        for record in iter_records(dump, fmt):
            if isinstance(record, Record) and record.label is not None:
                labeled += 1
                seen += index is not None and index.contains(record.abstract)
    return seen, labeled


def _note_training_overlap(predictor, dumps, fmt: str | None) -> None:
    """A labeled input whose records the model was trained on scores (near) perfectly: say so next to the
    accuracy line."""
    if predictor is None or getattr(predictor, "neighbors", None) is None:
        return
    seen, labeled = training_overlap(predictor, dumps, fmt)
    if seen:
        note(
            f"{seen:,} of {labeled:,} labeled records are in the model's training data: their accuracy is not a "
            f"fair figure (measure it on abstracts the model was not trained on)"
        )


def _note_older_output(output: Path, inputs) -> None:
    """After a failed run: say that a file already at ``output`` (not an input, not a folder) was kept."""
    from papertrack.serving.batch.labeler.outputs import same_file

    if output.is_file() and not any(same_file(Path(p), output) for p in inputs):
        note(f"{output} is from an earlier run and was left unchanged.")


def _print_summary(result) -> None:
    from papertrack.serving.batch.labeler import summary_lines

    for line in summary_lines(result):
        say(line)


def add_commands(app: typer.Typer) -> None:
    from papertrack.features.ingest.columns import reading_columns

    app.command("label")(reading_columns(label))


def _store():
    """papertrack's store, for the model of a local or Spark run (never created): decided here, by the command."""
    from papertrack import store
    from papertrack.errors import NoModelError
    from papertrack.serving.batch.labeler import ModelMissing

    try:
        return store.open(create=False)
    except NoModelError as exc:  # no store: the labeler's own error, as when the model is missing
        raise ModelMissing(str(exc)) from None
