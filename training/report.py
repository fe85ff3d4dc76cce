"""What ``papertrack train`` tells the user: the sweep's notes as it goes (data, holdouts, candidates), a progress
bar and one line per candidate, the champion's choice, and the results table at the end. It prints on the
console it is given (the CLI's, :mod:`papertrack.console`); without one, its lines go to the log."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from papertrack import settings
from papertrack.console import table as plain_table
from papertrack.models.candidates import Candidate
from papertrack.training.pipeline import Embedded
from papertrack.training.planning import COST_METRIC, Note
from papertrack.training.results import CandidateResult, Listener

if TYPE_CHECKING:
    from papertrack.training.sweep import SweepResult

log = logging.getLogger(__name__)
STYLES = {"detail": "dim", "warning": "yellow"}
TEMPORAL_COLUMNS = {
    "next-year top3": "temporal_label_top3",
    "top1": "temporal_label_top1",
    "area top1": "temporal_area_top1",
    "macro-F1": "temporal_label_macro_f1",
}


class SweepReport(Listener):
    """The sweep's console output; as the evaluation's listener, the progress bar and a line per candidate."""

    def __init__(self, console: Console | None = None):
        self.console = console
        self.progress = None
        self.task = None

    def line(self, markup: str) -> None:
        if self.console is not None:
            self.console.print(markup)
        else:
            log.info("%s", Text.from_markup(markup).plain)

    def notes(self, notes: Sequence[Note]) -> None:
        for note in notes:
            text = escape(note.text)
            style = STYLES.get(note.level)
            self.line(("  " if note.indent else "") + (f"[{style}]{text}[/]" if style else text))

    def summary(self, lines: Sequence[str]) -> None:
        """The reader's summary: first, they say why records were left out (duplicates, model guesses)."""
        self.notes([Note(line) for line in lines])

    def store(self, uri: str, experiment: str) -> None:
        self.line(f"MLflow store: [bold]{escape(uri)}[/]  (experiment '{escape(experiment)}')")

    def embeddings(self, embedded: Sequence[Embedded]) -> None:
        for e in embedded:
            rate = f", {e.encoded / e.seconds:.1f} abstracts/s" if e.encoded else ""
            self.line(
                f"Embeddings ({e.backend}): {e.total - e.encoded:,} of {e.total:,} abstracts from "
                f"the cache, {e.encoded:,} encoded in {e.seconds:.1f} s{rate} ({escape(e.where)})"
            )

    # the evaluation's progress: a bar on a terminal; elsewhere (a log file, a pipe) a plain line every ~10 s
    PLAIN_EVERY = 10.0

    def __enter__(self) -> SweepReport:
        self._plain = {"done": 0, "total": 0, "name": "", "started": time.monotonic(), "said": time.monotonic()}
        if self.console is not None and self.console.is_terminal:
            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            self.progress = Progress(*columns, console=self.console, transient=False)
            self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def started(self, total_folds: int) -> None:
        self._plain.update(done=0, total=total_folds, started=time.monotonic(), said=time.monotonic())
        if self.progress is not None:
            self.task = self.progress.add_task("cross-validating", total=total_folds)

    def candidate_started(self, candidate: Candidate) -> None:
        self._plain["name"] = candidate.name
        if self.progress is None:
            return
        if not candidate.is_ensemble:
            self.progress.update(self.task, description=f"{candidate.name:<34}")
        elif self.progress.live.is_started:
            self.progress.stop()  # ensembles refit nothing: no bar, just their lines

    def fold_done(self, candidate: Candidate) -> None:
        if self.progress is not None:
            self.progress.advance(self.task)
            return
        plain = self._plain
        plain["done"] += 1
        now = time.monotonic()
        if self.console is not None and now - plain["said"] >= self.PLAIN_EVERY:
            plain["said"] = now
            elapsed = int(now - plain["started"])
            self.line(
                f"cross-validating {escape(str(plain['name']))}: {plain['done']}/{plain['total']} folds, "
                f"{elapsed // 60}:{elapsed % 60:02d} elapsed"
            )

    def phase(self, description: str) -> None:
        self.line(escape(description))

    def candidate_done(self, result: CandidateResult) -> None:
        self.line(candidate_line(result.candidate.name, result.metrics))
        if result.candidate.is_ensemble:
            self.line(
                f"  {'':<34} weights: " + ", ".join(f"{m} {w:.2f}" for m, w in result.member_weights.items() if w > 0)
            )

    # the choice and the refit
    def ineligible(self, results: Sequence[CandidateResult], budget: float | None) -> None:
        if results:
            self.line(
                f"  [yellow]measured over the {budget:g} ms budget, so not eligible to win: "
                + ", ".join(f"{r.candidate.name} ({r.metrics[COST_METRIC]:.1f} ms/abstract)" for r in results)
                + " (raise --budget-ms or name them with -c)[/]"
            )

    def choice(self, result: SweepResult, records: int) -> None:
        self.line(f"Champion rule (on the {escape(result.yardstick)}): {escape(result.choice.reason)}")
        self.line(f"Winner: [bold]{result.winner.candidate.name}[/]; refitting on all {records:,} records")

    def calibration(self, message: str, warning: str) -> None:
        self.line(escape(message) + (f" [yellow]{escape(warning)}[/]" if warning else ""))

    def refit(self, seconds: float) -> None:
        self.line(f"Refit and logged the winner in {seconds:.1f} s")


def candidate_line(name: str, metrics: dict[str, float]) -> str:
    per_taxonomy = {
        key.split(".", 1)[1]: value for key, value in metrics.items() if key.startswith("temporal_label_top3.")
    }
    known = {key.split(".", 1)[1]: value for key, value in metrics.items() if key.startswith("known_label_top3.")}
    later = (
        f"next year top3 {metrics['temporal_label_top3']:.3f}"
        + (" (" + ", ".join(f"{k} {v:.3f}" for k, v in per_taxonomy.items()) + ")" if per_taxonomy else "")
        + f" top1 {metrics['temporal_label_top1']:.3f} area {metrics['temporal_area_top1']:.3f} | "
        + "".join(f"known {k} top3 {v:.3f} | " for k, v in known.items())
        if "temporal_label_top3" in metrics
        else ""
    )
    shift = f" | shift top3 {metrics['shift_label_top3']:.3f}" if "shift_label_top3" in metrics else ""
    return (
        f"  {name:<26} {later}CV top3 {metrics['cv_label_top3']:.3f} area {metrics['cv_area_top1']:.3f}"
        f"{shift} | {metrics['predict_ms_per_abstract']:.2f} ms"
    )


def print_results(console: Console, result: SweepResult) -> None:
    """The results table (best first, the majority baseline last), what its columns mean, the champion's
    choice and the registration."""
    shift = "shift_label_top3" in result.baseline
    later = "temporal_label_top3" in result.baseline
    title = f"Results (data {result.data_digest}; the champion is chosen on the {result.yardstick or 'CV'})"
    table = plain_table(title=title)
    table.add_column("candidate", no_wrap=True)
    columns = {
        **(TEMPORAL_COLUMNS if later else {}),
        "CV top3": "cv_label_top3",
        "CV area": "cv_area_top1",
        **({"shift top3": "shift_label_top3"} if shift else {}),
        "log-loss": "cv_log_loss",
        "ECE": "cv_ece",
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
            f"{m['cv_fit_seconds']:.1f}",
            f"{m['predict_ms_per_abstract']:.2f}",
            style="dim" if r.candidate.name in result.ineligible else None,
        )
    table.add_row("majority baseline", *cells(result.baseline), "-", "-", style="dim")
    console.print(table)
    notes = []
    if later:
        notes.append("next-year: trained on the earlier years, tested on the latest (what users live with)")
    notes.append(
        f"CV: {result.winner.cv.folds}-fold cross-validation on all sources (every metric of every candidate: "
        "papertrack runs, MLflow)"
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
        console.print(f"Champion rule: [bold]{result.choice.winner}[/] — {escape(result.choice.reason)}")
    if result.decision:
        d = result.decision
        colour = "green" if d.alias == settings.CHAMPION else "yellow"
        console.print(
            f"Registered [bold]{settings.MODEL_NAME}[/] version {d.version} as [{colour}]{d.alias}[/]: "
            f"{escape(d.reason)}"
        )
    console.print(f"Sweep wall time: {result.wall_seconds:.1f} s; parent run {result.parent_run_id}")
