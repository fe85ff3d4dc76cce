"""CLI commands of the training side: ``papertrack train`` and ``papertrack runs``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from papertrack import settings
from papertrack.features.ingest import FORMATS

# Tables are wide: when the output is not a terminal (CI logs, pipes) do not wrap them at 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)


def train(
    data: Annotated[
        list[Path] | None,
        typer.Option(
            "--data",
            "-d",
            help="Labeled file(s): JSONL/JSON/CSV(.gz) or a text dump. "
            "Default: the three labeled sources in $PAPERTRACK_DATA_DIR (../shared/data): iclr2024_topics.jsonl, "
            "icml2024_topics.jsonl and iclr2025_dev_topics.jsonl.",
        ),
    ] = None,
    fmt: Annotated[str | None, typer.Option("--format", help=f"Force the input format: {', '.join(FORMATS)}.")] = None,
    candidates: Annotated[
        list[str] | None,
        typer.Option("--candidate", "-c", help="Only these candidates (repeatable). Default: the whole sweep."),
    ] = None,
    folds: Annotated[int, typer.Option(min=2, max=20, help="Cross-validation folds.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the folds and of the models.")] = settings.DEFAULT_SEED,
    use_title: Annotated[bool, typer.Option(help="Put titles in front of abstracts (default: abstract only).")] = False,
    register: Annotated[bool, typer.Option(help="Register the winner as papertrack@champion/challenger.")] = True,
    accept_suggested: Annotated[
        bool,
        typer.Option(
            "--accept-suggested",
            help="Also train on labels still left as `papertrack suggest` guessed them "
            "(skipped by default: never train on the model's own guesses silently).",
        ),
    ] = False,
    budget_ms: Annotated[
        float,
        typer.Option(
            "--budget-ms",
            min=0.0,
            help="Predict cost per abstract (ms) the default sweep stays within: costlier "
            "candidates are left out (listed), and one measured over it cannot win. Named candidates (-c) run "
            "whatever they cost.",
        ),
    ] = 5.0,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            help="Fits run side by side (worker processes). Default: one per core, at most 2; "
            "the results do not depend on it.",
        ),
    ] = None,
    rename: Annotated[
        list[str] | None,
        typer.Option(
            "--rename",
            help="OLD=NEW: train OLD's examples as the track NEW (repeatable; added to the built-in "
            "map of renamed tracks, e.g. 2024's 'Applications · Genetics, Cell Biology, etc').",
        ),
    ] = None,
) -> None:
    """Evaluate every candidate (one MLflow run each) on next year's papers, refit the best, register it."""
    from papertrack.training.data import default_data_paths
    from papertrack.training.sweep import run_sweep

    paths = data or default_data_paths(settings.current().data_dir)
    result = run_sweep(
        paths,
        fmt=fmt,
        candidate_names=candidates,
        folds=folds,
        seed=seed,
        use_title=use_title,
        register=register,
        console=console,
        accept_suggested=accept_suggested,
        budget_ms=budget_ms,
        renames=rename or (),
        jobs=jobs,
    )
    _print_results(result)


TEMPORAL_COLUMNS = {
    "next-year top3": "temporal_label_top3",
    "top1": "temporal_label_top1",
    "area top1": "temporal_area_top1",
    "macro-F1": "temporal_label_macro_f1",
}


def _print_results(result) -> None:
    shift = "shift_label_top3" in result.baseline
    later = "temporal_label_top3" in result.baseline
    title = f"Results (data {result.data_digest}; the champion is chosen on the {result.yardstick or 'CV'})"
    table = Table(title=title)
    table.add_column("candidate", no_wrap=True)
    columns = {
        **(TEMPORAL_COLUMNS if later else {}),
        "CV top3": "label_top3",
        "CV area": "area_top1",
        **({"shift top3": "shift_label_top3"} if shift else {}),
        "log-loss": "log_loss",
        "ECE": "ece",
    }
    for column in (*columns, "fit s", "ms/abstract"):
        table.add_column(column, justify="right")

    def cells(m: dict[str, float]) -> list[str]:
        return [f"{m[k]:.3f}" for k in columns.values()]

    for r in result.leaderboard():
        m = r.metrics
        table.add_row(
            r.candidate.name,
            *cells(m),
            f"{m['fit_seconds']:.1f}",
            f"{m['predict_ms_per_abstract']:.2f}",
            style="dim" if r.candidate.name in result.ineligible else None,
        )
    table.add_row("majority baseline", *cells(result.baseline), "-", "-", style="dim")
    console.print(table)
    notes = []
    if later:
        notes.append("next-year: trained on the earlier years, tested on the latest (what users live with)")
    notes.append(
        "CV: 5-fold cross-validation on all sources (every metric of every candidate: papertrack runs, MLflow)"
    )
    if shift:
        notes.append("shift: cross-venue, trained on the other source(s), tested on the held-out one")
    console.print("; ".join(notes))
    if result.over_budget:
        console.print(
            f"Left out by the {result.budget_ms:g} ms/abstract budget: {', '.join(result.over_budget)} "
            f"(--budget-ms or -c NAME to run them)"
        )
    if result.choice:
        console.print(f"Champion rule: [bold]{result.choice.winner}[/] — {result.choice.reason}")
    if result.decision:
        d = result.decision
        colour = "green" if d.alias == settings.CHAMPION else "yellow"
        console.print(
            f"Registered [bold]{settings.MODEL_NAME}[/] version {d.version} as [{colour}]{d.alias}[/]: {d.reason}"
        )
    console.print(f"Sweep wall time: {result.wall_seconds:.1f} s; parent run {result.parent_run_id}")


def runs(
    all_sweeps: Annotated[
        bool, typer.Option("--all", help="Every sweep's candidates, not just the latest sweep.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many rows.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Every column of every row as JSON (one array).")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Every column of every row as CSV.")] = False,
) -> None:
    """Leaderboard of candidate runs from MLflow (best first; * marks the registered champion's run)."""
    from papertrack import registry, store
    from papertrack.training.leaderboard import leaderboard

    if as_json and as_csv:
        raise typer.BadParameter("choose one of --json and --csv")
    uri = store.configure()
    board = leaderboard(latest_sweep_only=not all_sweeps, limit=limit)
    if board.empty:
        console.print(f"No runs in {uri}. Run [bold]papertrack train[/] first.")
        raise typer.Exit(1)
    champion = registry.current_champion()
    champion_run = champion.tags.get("run_id") if champion is not None else None
    board.insert(0, "champion", board["run_id"] == champion_run)
    board["started"] = board["started"].astype(str)
    if as_json or as_csv:
        out = board.to_json(orient="records", indent=1) if as_json else board.to_csv(index=False)
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
        return
    later = board["temporal_label_top3"].notna().any()
    shift = board["shift_label_top3"].notna().any()
    columns = {
        **(
            {"next-yr top3": "temporal_label_top3", "top1": "temporal_label_top1", "area": "temporal_area_top1"}
            if later
            else {}
        ),
        "CV top3": "label_top3",
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

    for row in board.to_dict("records"):
        values = [cell(row[k], ".2f" if k == "predict_ms_per_abstract" else ".3f") for k in columns.values()]
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
    if uri.startswith(("http://", "https://")):
        console.print(f"Compare visually: open {uri} (the tracking server's UI)")
    else:
        console.print(f"Compare visually: mlflow ui --backend-store-uri {uri}")


def add_commands(app: typer.Typer) -> None:
    app.command()(train)
    app.command()(runs)
