"""CLI commands of the training side: ``papertrack train`` and ``papertrack runs``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from papertrack import settings
from papertrack.features.ingest import FORMATS

# Tables are wide: when the output is not a terminal (CI logs, pipes) do not wrap them at 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)


def train(
    data: Annotated[Optional[list[Path]], typer.Option(
        "--data", "-d", help="Labeled file(s): JSONL/JSON/CSV(.gz) or a text dump. "
        "Default: both labeled years, $PAPERTRACK_DATA_DIR/iclr2024_topics.jsonl and icml2024_topics.jsonl "
        "(../shared/data).")] = None,
    fmt: Annotated[Optional[str], typer.Option("--format", help=f"Force the input format: {', '.join(FORMATS)}.")] = None,
    candidates: Annotated[Optional[list[str]], typer.Option(
        "--candidate", "-c", help="Only these candidates (repeatable). Default: the whole sweep.")] = None,
    folds: Annotated[int, typer.Option(min=2, max=20, help="Cross-validation folds.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the folds and of the models.")] = settings.DEFAULT_SEED,
    use_title: Annotated[bool, typer.Option(help="Put titles in front of abstracts (default: abstract only).")] = False,
    register: Annotated[bool, typer.Option(help="Register the winner as papertrack@champion/challenger.")] = True,
    accept_suggested: Annotated[bool, typer.Option(
        "--accept-suggested", help="Also train on labels still left as `papertrack suggest` guessed them "
        "(skipped by default: never train on the model's own guesses silently).")] = False,
) -> None:
    """Cross-validate every candidate (one MLflow run each), refit the best, register it."""
    from papertrack.training.data import default_data_paths
    from papertrack.training.sweep import run_sweep

    paths = data or default_data_paths(settings.current().data_dir)
    result = run_sweep(paths, fmt=fmt, candidate_names=candidates, folds=folds, seed=seed,
                       use_title=use_title, register=register, console=console, accept_suggested=accept_suggested)
    _print_results(result)


SHIFT_COLUMNS = {"shift top3": "shift_label_top3", "shift top1": "shift_label_top1",
                 "shift area": "shift_area_top1"}


def _print_results(result) -> None:
    shift = "shift_label_top3" in result.baseline
    title = "Cross-validated" + (" and shift-holdout" if shift else "") + f" results (data {result.data_digest})"
    table = Table(title=title)
    for column in ("candidate", "family", "top3", "top1", "macro-F1", "area top1", "area F1", "log-loss", "ECE",
                   *(SHIFT_COLUMNS if shift else ()), "fit s", "ms/abstract"):
        table.add_column(column, justify="left" if column in ("candidate", "family") else "right",
                         no_wrap=column == "candidate")
    for r in result.leaderboard():
        m = r.metrics
        table.add_row(r.candidate.name, r.candidate.family, *_quality_cells(m), *_shift_cells(m, shift),
                      f"{m['fit_seconds']:.1f}", f"{m['predict_ms_per_abstract']:.3f}")
    table.add_row("majority baseline", "-", *_quality_cells(result.baseline), *_shift_cells(result.baseline, shift),
                  "-", "-", style="dim")
    console.print(table)
    if shift:
        console.print("top3 … ECE: 5-fold cross-validation on all sources; shift: trained on the other "
                      "source(s), tested on the held-out one (mean over directions)")
    if result.choice:
        console.print(f"Champion rule: [bold]{result.choice.winner}[/] — {result.choice.reason}")
    if result.decision:
        d = result.decision
        colour = "green" if d.alias == settings.CHAMPION else "yellow"
        console.print(f"Registered [bold]{settings.MODEL_NAME}[/] version {d.version} as [{colour}]{d.alias}[/]: {d.reason}")
    console.print(f"Sweep wall time: {result.wall_seconds:.1f} s; parent run {result.parent_run_id}")


def _shift_cells(m: dict[str, float], shift: bool) -> list[str]:
    return [f"{m[k]:.3f}" for k in SHIFT_COLUMNS.values()] if shift else []


def _quality_cells(m: dict[str, float]) -> list[str]:
    """top3, top1, macro-F1, area top1, area F1, log-loss, ECE."""
    return [f"{m[k]:.3f}" for k in ("label_top3", "label_top1", "label_macro_f1", "area_top1", "area_macro_f1",
                                    "log_loss", "ece")]


def runs(
    all_sweeps: Annotated[bool, typer.Option("--all", help="Every sweep's candidates, not just the latest sweep.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many rows.")] = 50,
) -> None:
    """Leaderboard of candidate runs from MLflow (best first)."""
    from papertrack import store
    from papertrack.training.leaderboard import leaderboard

    uri = store.configure()
    board = leaderboard(latest_sweep_only=not all_sweeps, limit=limit)
    if board.empty:
        console.print(f"No runs in {uri}. Run [bold]papertrack train[/] first.")
        raise typer.Exit(1)
    table = Table(title=f"papertrack runs — {uri}")
    shift = board["shift_label_top3"].notna().any()
    for column in ("run", "candidate", "family", "top3", "top1", "macro-F1", "area top1", "log-loss", "ECE",
                   *(SHIFT_COLUMNS if shift else ()), "ms/abstract", "fit s"):
        table.add_column(column)

    def cell(value, spec: str = ".3f") -> str:
        return "-" if value is None or value != value else format(value, spec)

    for row in board.to_dict("records"):
        table.add_row(row["run_id"][:8], row["candidate"], row["family"],
                      *(cell(row[k]) for k in ("label_top3", "label_top1", "label_macro_f1", "area_top1", "log_loss",
                                               "ece")),
                      *((cell(row[k]) for k in SHIFT_COLUMNS.values()) if shift else ()),
                      cell(row["predict_ms_per_abstract"]), cell(row["fit_seconds"], ".1f"))
    console.print(table)
    console.print("top3 … ECE: cross-validated on all sources; shift: trained on the other source(s), tested "
                  "on the held-out one. Best first by " + ("shift top3" if shift else "CV top3") + ".")
    if uri.startswith(("http://", "https://")):
        console.print(f"Compare visually: open {uri} (the tracking server's UI)")
    else:
        console.print(f"Compare visually: mlflow ui --backend-store-uri {uri}")


def add_commands(app: typer.Typer) -> None:
    app.command()(train)
    app.command()(runs)
