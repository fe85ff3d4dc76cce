"""The table ``papertrack runs`` prints: it fits 80 columns by default (every candidate's full name, short column
headers, three decimals, the metrics that choose the champion), ``--wide`` adds every other metric; the serving
champion's run is marked ``*`` (and the challenger's ``+``) in every view, and a short legend says what the columns
are, each line under 80 characters."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
from rich.markup import escape
from rich.table import Table

from papertrack.store import Store

# default columns: header -> leaderboard column (the ones absent from every row are left out)
NARROW = {
    "next3": "temporal_label_top3",
    "next1": "temporal_label_top1",
    "area1": "temporal_area_top1",
    "cv3": "cv_label_top3",
    "shift3": "shift_label_top3",
    "ms": "predict_ms_per_abstract",
}
# --wide adds these (and every taxonomy's own columns)
WIDE = {
    "nextF1": "temporal_label_macro_f1",
    "cv1": "cv_label_top1",
    "cvF1": "cv_label_macro_f1",
    "cvArea": "cv_area_top1",
    "logloss": "cv_log_loss",
    "ECE": "cv_ece",
    "shift1": "shift_label_top1",
    "fit s": "cv_fit_seconds",
}
LEGEND = {
    "next3": "next3/next1/area1: label top-3, top-1 and top area on the latest year's papers\n"
    "  (trained on the earlier years)",
    "cv3": "cv3: label top-3 cross-validated on all sources",
    "shift3": "shift3: label top-3 on a held-out source, trained on the other(s)",
    "ms": "ms: predict cost per abstract",
}


def _present(board: pd.DataFrame, column: str) -> bool:
    return column in board.columns and bool(board[column].notna().any())


def _cell(value: object, spec: str = ".3f") -> str:
    if value is None or value != value:
        return "-"
    return format(value, spec)


def runs_table(
    board: pd.DataFrame,
    marks: dict[str, str],
    *,
    wide: bool = False,
    all_sweeps: bool = False,
    earlier: frozenset[str] = frozenset(),
) -> tuple[Table, list[str]]:
    """(the table of ``board``'s rows, the legend's lines); ``marks``: run id -> "*" (champion) or "+"; ``earlier``:
    the run ids added to the view because they serve (the champion of an earlier sweep), shown after a rule."""
    columns = {header: name for header, name in NARROW.items() if _present(board, name)}
    if "next1" in columns and "next3" not in columns:
        columns.pop("next1")
    if wide:
        per_taxonomy = {
            f"{c.split('.', 1)[1]} {'known3' if c.startswith('known') else 'next3'}": c
            for c in board.columns
            if c.startswith(("temporal_label_top3.", "known_label_top3.", "temporal_area_top1.")) and _present(board, c)
        }
        per_taxonomy = {
            (h.replace("next3", "area1") if c.startswith("temporal_area_top1.") else h): c
            for h, c in per_taxonomy.items()
        }
        columns = {
            **{h: c for h, c in columns.items() if h != "ms"},
            **per_taxonomy,
            **{h: c for h, c in WIDE.items() if _present(board, c)},
            **({"ms": columns["ms"]} if "ms" in columns else {}),
        }
    table = Table(pad_edge=False, box=None, collapse_padding=True)
    table.add_column("", width=1, no_wrap=True)
    longest = max((len(str(name)) for name in board["candidate"]), default=9)
    table.add_column("candidate", no_wrap=True, min_width=longest)
    for header in columns:
        table.add_column(header, justify="right", no_wrap=True)
    if wide:
        table.add_column("data", no_wrap=True)
    previous = None
    for row in board.to_dict("records"):
        digest = str(row.get("data_digest") or "-")[:8]
        if all_sweeps and digest != previous:
            if previous is not None:
                table.add_section()
            table.add_row("", f"[dim]data {escape(digest)}:[/]")
            previous = digest
        if row["run_id"] in earlier:
            table.add_section()
            table.add_row("", "[dim]serving, from an earlier sweep:[/]")
        mark = marks.get(row["run_id"], "")
        values = [
            _cell(row.get(c), ".2f" if c in ("predict_ms_per_abstract", "cv_fit_seconds") else ".3f")
            for c in columns.values()
        ]
        table.add_row(
            mark,
            escape(str(row["candidate"])),
            *values,
            *([digest] if wide else []),
            style="bold" if mark == "*" else None,
        )
    ranked_by = next((h for h in ("next3", "shift3", "cv3") if h in columns), "cv3")
    legend = [LEGEND[h] for h in LEGEND if h in columns]
    if any(c.startswith(("temporal_label_top3.", "known_label_top3.")) for c in columns.values()):
        legend.append("<taxonomy> next3/known3: top-3 in that taxonomy on the latest year / known papers")
    legend.append(
        f"Marks: * serving champion, + challenger. Best first by {ranked_by}"
        + (", ranked within each data." if all_sweeps else ".")
    )
    legend.append("Every metric: --wide, --json or --csv.")
    return table, legend


def running_note(store: Store) -> str:
    """ "a sweep is running (started 22:41 UTC, 3 min ago; parent run 0613b704)" for each RUNNING sweep, and "a
    later sweep failed (…)" for the sweeps after the last finished one that failed, else ""."""
    from papertrack.training.leaderboard import failed_sweeps, running_sweeps

    notes = []
    failed = failed_sweeps(store)
    if not failed.empty:
        newest = failed.iloc[0]
        notes.append(
            f"a later sweep failed (started {newest['start_time'].to_pydatetime():%Y-%m-%d %H:%M} UTC; run "
            f"{str(newest['run_id'])[:8]}): shown is the last finished sweep"
        )
    found = running_sweeps(store)
    if found.empty:
        return "; ".join(notes)
    newest = found.iloc[0]
    started = newest["start_time"].to_pydatetime()
    minutes = max(0, int((datetime.now(UTC) - started).total_seconds() // 60))
    more = f" ({len(found) - 1} more sweep run(s) still marked running)" if len(found) > 1 else ""
    running = (
        f"a sweep is running (started {started:%H:%M} UTC, {minutes} min ago; run {str(newest['run_id'])[:8]}){more}"
    )
    return "; ".join([*notes, running])
