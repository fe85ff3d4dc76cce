"""`papertrack train` writing to a log file (not a terminal): no progress bar redrawn in place, but a plain progress
line every ~10 s of cross-validation; tables in plain columns; nothing wrapped."""

from __future__ import annotations

import io

from rich.console import Console

from papertrack.models.candidates import tfidf_candidates
from papertrack.training.report import SweepReport


def test_off_a_terminal_cross_validation_says_where_it_is_in_plain_lines(monkeypatch):
    out = io.StringIO()
    report = SweepReport(Console(file=out, force_terminal=False, width=80))
    monkeypatch.setattr(SweepReport, "PLAIN_EVERY", 0.0)
    candidate = tfidf_candidates()[0]
    with report:
        report.started(6)
        report.candidate_started(candidate)
        report.fold_done(candidate)
        report.fold_done(candidate)
        report.started(4)  # the next taxonomy's evaluation counts its own folds
        report.fold_done(candidate)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"cross-validating {candidate.name}: 1/6 folds, 0:0")
    assert lines[1].startswith(f"cross-validating {candidate.name}: 2/6 folds, ")
    assert lines[2].startswith(f"cross-validating {candidate.name}: 1/4 folds, ")
    assert "\x1b" not in out.getvalue() and "━" not in out.getvalue()  # no bar, no escape codes


def test_off_a_terminal_the_progress_lines_are_spaced(monkeypatch):
    out = io.StringIO()
    report = SweepReport(Console(file=out, force_terminal=False, width=80))
    candidate = tfidf_candidates()[0]
    with report:
        report.started(6)
        report.candidate_started(candidate)
        for _ in range(6):
            report.fold_done(candidate)  # all within 10 s: nothing said yet
    assert out.getvalue() == ""


def test_stdout_to_a_file_is_never_wrapped_and_tables_have_no_box(tmp_path):
    import subprocess
    import sys

    code = (
        "from papertrack.console import console, table\n"
        "t = table(title='T'); t.add_column('name'); t.add_row('x' * 300)\n"
        "console.print('word ' * 60); console.print(t)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0].strip() == ("word " * 60).strip()  # one line of 300 characters
    assert any(line.strip() == "x" * 300 for line in lines)
    assert not any(ch in out for ch in "┏━│┃└┘")
