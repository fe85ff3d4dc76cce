"""CLI commands of the training side: ``papertrack train`` and ``papertrack runs``."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from papertrack import settings
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
    plots: Annotated[
        str | None, typer.Option("--plots", metavar="top2|all|none", help=option_help("plots"))
    ] = DEFAULTS.plots,
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
    from papertrack.training.fingerprint import input_fingerprint, tag_version, unchanged

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
        plots=plots,
    )
    with use_columns(abstract_column, title_column, id_column):
        check_inputs(config.paths, fmt)  # a CSV without its abstract column: before anything else
        fingerprint = input_fingerprint(config) if register else None  # data, options, code, crosswalks
        existing = _existing_store() if fingerprint is not None and not force else None
        if existing is not None and (same := unchanged(existing, fingerprint)) is not None:
            console.print(same, highlight=False)
            _print_size(console, existing)
            return
        from papertrack.training.sweep import run_sweep  # the heavy imports: only when training

        result = run_sweep(config, store.open, console=console)
    from papertrack.training.report import print_results
    from papertrack.training.runs_link import RUNS_VIEW_KEY, print_runs_link

    opened = store.open()  # once for what follows the sweep
    if result.decision is not None:
        tag_version(opened, result.decision.version, fingerprint)
        _remember_champion(opened)
        with contextlib.suppress(typer.Exit):  # the leaderboard `papertrack runs` shows, kept the same way
            _runs_answer(opened)
    print_results(console, result)
    print_runs_link(console, result.tracking_uri, result.experiment_id, RUNS_VIEW_KEY)
    _print_size(console, opened)


def _remember_champion(opened) -> None:
    """What the registry now answers for ``champion``, kept for the commands that only read (label, serve, …: see
    papertrack.registry_cache), so the first of them after a train starts without MLflow too."""
    from papertrack import registry_cache, store
    from papertrack.models.loading import pin, stored_at

    before = registry_cache.state(opened)  # after the sweep's last write
    if before is None:
        return
    from mlflow.exceptions import MlflowException

    try:  # best effort, as every write of the cache: the next read command asks MLflow instead
        with store.using(opened):
            pinned = pin(f"models:/{settings.MODEL_NAME}@{settings.CHAMPION}")
            folder = Path(stored_at(pinned.uri))  # a local artifact store's own folder (else not kept)
    except (MlflowException, OSError):
        return
    registry_cache.remember_pinned(
        opened, registry_cache.key(settings.MODEL_NAME, settings.CHAMPION), pinned, folder, before
    )


def _print_size(console, opened) -> None:
    line = opened.size_line()
    if line is not None:
        console.print(line, highlight=False)


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
    wide: Annotated[
        bool, typer.Option("--wide", help="Every metric column (per taxonomy, macro-F1, log-loss, ...): ~200 columns.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Every column of every row as JSON (one array).")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Every column of every row as CSV.")] = False,
) -> None:
    """Leaderboard of candidate runs from MLflow (best first; * the serving champion's run, + the challenger's)."""
    import pandas as pd

    from papertrack import store
    from papertrack.training.runs_link import print_runs_link
    from papertrack.training.runs_table import runs_table

    if as_json and as_csv:
        raise typer.BadParameter("choose one of --json and --csv")
    if all_sweeps and sweep is not None:
        raise typer.BadParameter("choose one of --all and --sweep")
    if sweep is not None and not re.fullmatch(r"[0-9a-fA-F]+", sweep):
        raise typer.BadParameter(f"{sweep!r} is not a run id (hexadecimal, as train prints it: 'parent run 9df3…')")
    opened = store.open(create=False)  # a read: never creates a store
    uri = opened.tracking_uri
    shown, running = _runs_answer(opened, all_sweeps, sweep, limit)
    board = pd.DataFrame.from_records(shown["board"], columns=shown["columns"])
    marks, earlier, view = shown["marks"], frozenset(shown["earlier"]), tuple(shown["view"])
    if as_json or as_csv:
        out = board.to_json(orient="records", indent=1) if as_json else board.to_csv(index=False)
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
        return
    table, legend = runs_table(board, marks, wide=wide, all_sweeps=all_sweeps, earlier=earlier)
    console.print(f"papertrack runs — {uri}", highlight=False, style="italic")
    if wide:  # every column at its natural width: wider than the terminal, which wraps the lines
        natural = console.measure(table, options=console.options.update(width=10_000)).maximum
        width = console.width
        console.width = max(width, natural)  # rich renders no wider than the console
        try:
            console.print(table, crop=False)
        finally:
            console.width = width
    else:
        console.print(table)
    for line in legend:
        console.print(line, highlight=False)
    if running:
        console.print(f"[yellow]{running}[/]\nThe table shows the last finished sweep.", highlight=False)
    print_runs_link(console, uri, *view)


def _runs_answer(opened, all_sweeps: bool = False, sweep: str | None = None, limit: int = 50) -> tuple[dict, str]:
    """What ``papertrack runs`` shows (JSON: the board's rows and columns, the marks by run id, the earlier runs
    shown, the MLflow view) and a note on running or failed sweeps: the answer kept while the store has not changed
    (:mod:`papertrack.registry_cache`), else MLflow's, then kept (not while a sweep is running: its note ages)."""
    from papertrack import registry_cache

    asked = json.dumps(["runs", all_sweeps, sweep, limit])
    kept = registry_cache.answer(opened, asked)
    if kept is not None:
        return kept, ""
    from papertrack.training.leaderboard import runs_view

    before = registry_cache.state(opened)
    board, marks, earlier, running = _leaderboard(opened, all_sweeps, sweep, limit)
    answer = {"board": board.to_dict(orient="records"), "columns": list(board.columns), "marks": marks}
    answer.update(earlier=sorted(earlier), view=list(runs_view(opened)))
    if not running:
        registry_cache.remember_answer(opened, asked, answer, before)
    return answer, running


def _leaderboard(opened, all_sweeps: bool, sweep: str | None, limit: int):
    """What ``papertrack runs`` shows, from MLflow: (the board with its champion and challenger columns, the marks by
    run id, the earlier runs shown, a note on running or failed sweeps); exits when there is nothing to show."""
    import pandas as pd

    from papertrack import registry
    from papertrack.training.leaderboard import leaderboard, runs_by_id
    from papertrack.training.runs_table import running_note

    uri = opened.tracking_uri
    running = running_note(opened) if sweep is None else ""
    board = leaderboard(opened, latest_sweep_only=not all_sweeps, limit=limit, sweep=sweep)
    if board.empty and sweep is not None:
        console.print(f"No candidate runs of sweep {sweep} in {uri}. `papertrack runs --all --json` lists them all.")
        raise typer.Exit(1)
    if board.empty:
        if running:
            console.print(f"{running}; no sweep has finished yet in {uri}.")
            raise typer.Exit(0)
        console.print(f"No runs in {uri}. Run [bold]papertrack train[/] first.")
        raise typer.Exit(1)
    marks = {}
    for alias, mark in ((settings.CHALLENGER, "+"), (settings.CHAMPION, "*")):
        version = registry.version_by_alias(opened, alias)
        if version is not None and version.tags.get("run_id"):
            marks[version.tags["run_id"]] = mark
    champion_run = next((run for run, mark in marks.items() if mark == "*"), None)
    earlier: frozenset[str] = frozenset()
    if champion_run is not None and champion_run not in set(board["run_id"]) and sweep is None:
        board = pd.concat([board, runs_by_id(opened, [champion_run])], ignore_index=True)  # the champion, always
        earlier = frozenset([champion_run])
    board.insert(0, "champion", board["run_id"] == champion_run)
    board.insert(1, "challenger", board["run_id"].map(lambda run: marks.get(run) == "+"))
    board["started"] = board["started"].astype(str)
    return board, marks, earlier, running


def add_commands(app: typer.Typer) -> None:
    app.command()(train)
    app.command()(runs)


def _existing_store():
    """The store to compare the inputs with, or None when there is none yet (nothing is created before the data
    has been read and checked: a train refused on its data leaves no store behind)."""
    from papertrack import store

    try:
        return store.open(create=False)
    except store.NoStore:
        return None
