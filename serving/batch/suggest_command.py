"""``papertrack suggest``: the abstracts of new dumps whose labels would teach the champion most."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from papertrack import settings
from papertrack.cli_options import AbstractColumn, IdColumn, TitleColumn
from papertrack.errors import UsageError
from papertrack.features.ingest import FORMATS
from papertrack.features.ingest.stdin_copy import exits_on_sigterm
from papertrack.serving.command_output import note, say


def load_model(model_uri: str):
    """The TrackPredictor behind ``model_uri`` in papertrack's store (decided here, by the command); NoModelError
    saying how to get one."""
    from papertrack import store
    from papertrack.serving.model_loader import load_model as load

    return load(model_uri, store.open(create=False)).predictor


@exits_on_sigterm  # the copy of standard input (-) is removed on SIGTERM too
def suggest(
    dumps: Annotated[
        list[Path],
        typer.Argument(
            help="Unlabeled dump(s): JSONL/JSON/CSV or text dumps, optionally .gz; - reads standard input.",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="Where to write the picks: .txt (labeled text dump to edit), .jsonl or .csv."
        ),
    ] = Path("to_label.txt"),
    n: Annotated[int, typer.Option("-n", "--number", min=1, help="How many abstracts to pick.")] = 50,
    strategy: Annotated[
        str, typer.Option(help="diverse (uncertain and unlike each other), uncertainty, or random.")
    ] = "diverse",
    measure: Annotated[str, typer.Option(help="Uncertainty: margin (1 - (p1 - p2)) or entropy.")] = "margin",
    model: Annotated[
        str, typer.Option("--model", "-m", help="MLflow model URI.")
    ] = f"models:/{settings.MODEL_NAME}@{settings.CHAMPION}",
    seed: Annotated[int, typer.Option(help="Seed of the random strategy.")] = settings.DEFAULT_SEED,
    taxonomy: Annotated[
        str | None,
        typer.Option(
            "--taxonomy",
            "-t",
            help="The taxonomy whose names the picks are pre-labeled in (papertrack taxonomies lists them). "
            "Default: the model's default taxonomy.",
        ),
    ] = None,
    fmt: Annotated[str | None, typer.Option("--format", help=f"Force the input format: {', '.join(FORMATS)}.")] = None,
    abstract_column: AbstractColumn = None,
    title_column: TitleColumn = None,
    id_column: IdColumn = None,
) -> None:
    """Pick the abstracts whose labels would teach the model most; write them, pre-labeled with its guess, to edit."""
    from papertrack.features.ingest import expand_stdin
    from papertrack.features.ingest.columns import check_inputs
    from papertrack.serving.batch import suggest as s

    if strategy not in s.STRATEGIES:
        raise UsageError(f"--strategy must be one of {', '.join(s.STRATEGIES)}, got {strategy!r}")
    if measure not in s.MEASURES:
        raise UsageError(f"--measure must be one of {', '.join(s.MEASURES)}, got {measure!r}")
    s.output_kind(output)  # a bad extension fails before the model loads
    dumps = expand_stdin(dumps)
    s.check_output(output, dumps)  # never write over an input
    check_inputs(dumps, fmt)  # a CSV without its abstract column: before the dumps are read
    pool = s.read_pool(dumps, fmt)
    if pool.bad:
        first = pool.bad[0]
        note(
            f"{len(pool.bad):,} record(s) cannot be used and are not in the pool (first: {first.source}:"
            f"{first.line}: {first.reason})"
        )
    if pool.headers:
        note(f"{pool.headers:,} header paragraph(s) of text dumps skipped")
    if pool.duplicates:
        note(f"{pool.duplicates:,} duplicate abstract(s) counted once")
    if not pool.records:
        raise UsageError("no usable abstract in the input")
    predictor = load_model(model).head(taxonomy)  # an unknown taxonomy: a usage error listing the known ones
    picks = s.suggest(predictor, pool.records, n, strategy, measure=measure, seed=seed, notice=note)
    s.write_suggestions(output, picks, strategy=strategy, model=predictor.card.short())
    mean = sum(p.uncertainty for p in picks) / len(picks)
    say(
        f"Picked {len(picks):,} of {len(pool.records):,} abstracts ({strategy}, mean {measure} uncertainty "
        f"{mean:.3f}) with {model} ({predictor.card.short()}) -> {output}"
    )
    if s.output_kind(output) == "text":
        say(
            f"Edit the label lines (delete a '# model-suggested:' line once its label is checked), then: "
            f"papertrack train --data <training data> --data {output}"
        )


def add_commands(app: typer.Typer) -> None:
    from papertrack.features.ingest.columns import reading_columns

    app.command("suggest")(reading_columns(suggest))
