"""CLI commands of the training side: ``papertrack train`` and ``papertrack runs``."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from papertrack.cli_options import AbstractColumn, IdColumn, TitleColumn
from papertrack.console import console
from papertrack.features.ingest import FORMATS
from papertrack.training.config import DEFAULTS, MAX_FOLDS, MIN_FOLDS, SweepConfig, option_help


def train(
    data: Annotated[list[Path] | None, typer.Option("--data", "-d", help=option_help("data_paths"))] = None,
    fmt: Annotated[
        str | None, typer.Option("--format", help=f"{option_help('fmt')}: {', '.join(FORMATS)}.")
    ] = DEFAULTS.fmt,
    abstract_column: AbstractColumn = None,
    title_column: TitleColumn = None,
    id_column: IdColumn = None,
    candidates: Annotated[
        list[str] | None, typer.Option("--candidate", "-c", help=option_help("candidate_names"))
    ] = None,
    folds: Annotated[int, typer.Option(min=MIN_FOLDS, max=MAX_FOLDS, help=option_help("folds"))] = DEFAULTS.folds,
    seed: Annotated[int, typer.Option(help=option_help("seed"))] = DEFAULTS.seed,
    use_title: Annotated[bool, typer.Option(help=option_help("use_title"))] = DEFAULTS.use_title,
    register: Annotated[bool, typer.Option(help=option_help("register"))] = DEFAULTS.register,
    accept_suggested: Annotated[
        bool, typer.Option("--accept-suggested", help=option_help("accept_suggested"))
    ] = DEFAULTS.accept_suggested,
    budget_ms: Annotated[
        float, typer.Option("--budget-ms", min=0.0, help=option_help("budget_ms"))
    ] = DEFAULTS.budget_ms,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help=option_help("jobs"))] = DEFAULTS.jobs,
    rename: Annotated[list[str] | None, typer.Option("--rename", help=option_help("renames"))] = None,
    crosswalk: Annotated[
        list[Path] | None, typer.Option("--crosswalk", metavar="FILE", help=option_help("crosswalks"))
    ] = None,
    shift_holdout: Annotated[
        bool, typer.Option("--shift-holdout", help=option_help("shift_holdout"))
    ] = DEFAULTS.shift_holdout,
    force: Annotated[bool, typer.Option("--force", help=option_help("force"))] = DEFAULTS.force,
    no_crosswalks: Annotated[
        bool,
        typer.Option(
            "--no-crosswalks",
            help="No crosswalk, not even the shipped ones or those beside the data: a venue with names of "
            "its own is still a taxonomy of its own, taught by the names it shares with the older ones.",
        ),
    ] = False,
) -> None:
    """Evaluate every candidate (one MLflow run each) on next year's papers, refit the best, register it."""
    from papertrack import store
    from papertrack.features.ingest.columns import check_inputs, use_columns
    from papertrack.training.report import print_results
    from papertrack.training.runs_link import RUNS_VIEW_KEY, print_runs_link
    from papertrack.training.sweep import run_sweep

    config = SweepConfig(
        data_paths=data or (),
        fmt=fmt,
        candidate_names=candidates,
        folds=folds,
        seed=seed,
        use_title=use_title,
        register=register,
        accept_suggested=accept_suggested,
        budget_ms=budget_ms,
        renames=rename or (),
        crosswalks=() if no_crosswalks else (crosswalk or None),
        shift_holdout=shift_holdout,
        force=force,
        jobs=jobs,
    )
    with use_columns(abstract_column, title_column, id_column):
        check_inputs(config.paths, fmt)  # a CSV without its abstract column: before anything else
        result = run_sweep(config, store.open, console=console)
    print_results(console, result)
    print_runs_link(console, result.tracking_uri, result.experiment_id, RUNS_VIEW_KEY)


def runs(
    all_sweeps: Annotated[
        bool, typer.Option("--all", help="Every sweep's candidates, not just the latest sweep.")
    ] = False,
    sweep: Annotated[
        str | None,
        typer.Option(
            "--sweep", metavar="RUN_ID", help="The candidates of this sweep (its parent run id, which train prints)."
        ),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many rows.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Every column of every row as JSON (one array).")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Every column of every row as CSV.")] = False,
) -> None:
    """Leaderboard of candidate runs from MLflow (best first; * marks the registered champion's run)."""
    from papertrack import registry, store
    from papertrack.training.leaderboard import leaderboard, runs_view
    from papertrack.training.runs_link import print_runs_link

    if as_json and as_csv:
        raise typer.BadParameter("choose one of --json and --csv")
    if all_sweeps and sweep is not None:
        raise typer.BadParameter("choose one of --all and --sweep")
    if sweep is not None and not re.fullmatch(r"[0-9a-fA-F]+", sweep):
        raise typer.BadParameter(f"{sweep!r} is not a run id (hexadecimal, as train prints it: 'parent run 9df3…')")
    opened = store.open(create=False)  # a read: never creates a store
    uri = opened.tracking_uri
    board = leaderboard(opened, latest_sweep_only=not all_sweeps, limit=limit, sweep=sweep)
    if board.empty and sweep is not None:
        console.print(f"No candidate runs of sweep {sweep} in {uri}. `papertrack runs --all --json` lists them all.")
        raise typer.Exit(1)
    if board.empty:
        console.print(f"No runs in {uri}. Run [bold]papertrack train[/] first.")
        raise typer.Exit(1)
    champion = registry.current_champion(opened)
    champion_run = champion.tags.get("run_id") if champion is not None else None
    board.insert(0, "champion", board["run_id"] == champion_run)
    board["started"] = board["started"].astype(str)
    if as_json or as_csv:
        out = board.to_json(orient="records", indent=1) if as_json else board.to_csv(index=False)
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
        return
    later = board["temporal_label_top3"].notna().any()
    shift = board["shift_label_top3"].notna().any()
    per_taxonomy = {
        f"{c.split('.', 1)[1]} {'known' if c.startswith('known') else 'next-yr'} top3": c
        for c in board.columns
        if c.startswith(("temporal_label_top3.", "known_label_top3.")) and board[c].notna().any()
    }
    columns = {
        **(
            {"next-yr top3": "temporal_label_top3", "top1": "temporal_label_top1", "area": "temporal_area_top1"}
            if later
            else {}
        ),
        **per_taxonomy,
        "CV top3": "cv_label_top3",
        **({"shift top3": "shift_label_top3"} if shift else {}),
        "ms": "predict_ms_per_abstract",
    }
    table = Table(title=f"papertrack runs — {uri}", title_justify="left", pad_edge=False, box=None)
    table.add_column("", width=1, no_wrap=True)
    table.add_column("candidate", no_wrap=True, overflow="fold")
    for column in columns:
        table.add_column(column, justify="right", no_wrap=True)
    if all_sweeps:
        table.add_column("data", no_wrap=True)

    def cell(value, spec: str = ".3f") -> str:
        return "-" if value is None or value != value else format(value, spec)

    previous_digest = None
    for row in board.to_dict("records"):
        values = [cell(row[k], ".2f" if k == "predict_ms_per_abstract" else ".3f") for k in columns.values()]
        if all_sweeps and row.get("data_digest") != previous_digest:
            if previous_digest is not None:
                table.add_section()
            previous_digest = row.get("data_digest")
            table.add_row("", f"[dim]data {str(previous_digest or '-')[:8]}: ranked within this data only[/]")
        table.add_row(
            "*" if row["champion"] else "",
            row["candidate"],
            *values,
            *([str(row.get("data_digest") or "-")[:8]] if all_sweeps else []),
            style="bold" if row["champion"] else None,
        )
    console.print(table)
    console.print(
        ("next-yr: trained on the earlier years, tested on the latest; " if later else "")
        + "CV: cross-validated on all sources; "
        + ("shift: trained on the other source(s), tested on the held-out one; " if shift else "")
        + "ms: predict cost per abstract; * champion. Best first "
        "by " + ("next-yr top3" if later else "shift top3" if shift else "CV top3") + ". Every column: --json / --csv.",
        soft_wrap=False,
    )
    print_runs_link(console, uri, *runs_view(opened))


def add_commands(app: typer.Typer) -> None:
    app.command()(train)
    app.command()(runs)
