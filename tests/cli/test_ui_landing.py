"""``papertrack ui`` in a real browser: started on the session's small trained store (a free loopback port), the URL
it prints opened in a fresh Chromium profile at 1280x900 (Debian's /usr/bin/chromium driven by Playwright) shows
MLflow's runs table ("Model training"), not its GenAI overview: the sweep's candidates, best first, with the
leaderboard's metric columns. MLflow 3.17 opens its Assistant panel on the first visit of a loopback UI (no URL
parameter closes it), so the columns are checked once the panel is closed, as ``papertrack ui`` tells users to.
Screenshots go to ``test-artifacts/ui/`` (``PAPERTRACK_TEST_ARTIFACTS`` overrides the folder). A port in use is one
``error:`` line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..processes import free_port, stop

pytestmark = pytest.mark.slow

ARTIFACTS = (
    Path(os.environ.get("PAPERTRACK_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts")) / "ui"
)
LEADERBOARD = (  # what `papertrack runs` shows for a sweep over two years and several venues
    "temporal_label_top3",
    "temporal_label_top1",
    "temporal_area_top1",
    "cv_label_top3",
    # (no shift_label_top3: the shift holdout runs only with --shift-holdout when there is a temporal one)
    "predict_ms_per_abstract",
)
TIMEOUT_MS = 120_000


def _papertrack(*args: str, home: Path) -> subprocess.Popen:
    env = {**os.environ, "PAPERTRACK_HOME": str(home)}
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.Popen(
        [sys.executable, "-m", "papertrack.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _printed_link(proc: subprocess.Popen, seconds: float = 240) -> tuple[str, list[str]]:
    deadline, lines = time.monotonic() + seconds, []
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if "#/experiments/" in line:
            lines.append(proc.stdout.readline().rstrip("\n"))  # what to do about the Assistant panel
            return line.strip(), lines
    raise AssertionError(f"papertrack ui printed no runs link: {lines} {proc.stderr.read() if proc.stderr else ''}")


def _headers(page) -> dict[str, dict]:
    """Metric column headers now rendered in the table: name -> bounding box."""
    boxes = {}
    for header in page.locator("[role=columnheader]").all():
        name = header.inner_text().strip()
        if name in LEADERBOARD and header.is_visible():
            boxes[name] = header.bounding_box()
    return boxes


def test_papertrack_ui_opens_the_runs_table_with_the_leaderboard_columns(trained, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    ui = _papertrack("ui", "--port", str(port), "--no-browser", home=trained["home"])
    try:
        link, printed = _printed_link(ui)
        assert link.startswith(f"http://127.0.0.1:{port}/#/experiments/")
        assert "workflowType=machine_learning" in link and "viewStateShareKey=papertrack-leaderboard" in link
        assert printed[0].startswith(f"MLflow UI on http://127.0.0.1:{port} for {trained['home']} (PAPERTRACK_HOME)")
        assert "Assistant panel on the right: close it (x) to see every column" in printed[-1], printed

        second = _papertrack("ui", "--port", str(port), "--no-browser", home=trained["home"])
        out, err = second.communicate(timeout=120)
        assert second.returncode == 2 and err.strip().startswith(f"error: port {port} on 127.0.0.1 is in use"), err
        assert len(err.strip().splitlines()) == 1

        context = browser.new_context(viewport={"width": 1280, "height": 900})  # a fresh profile
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(link, wait_until="domcontentloaded", timeout=TIMEOUT_MS)
        page.get_by_role("columnheader", name=LEADERBOARD[0]).first.wait_for()
        page.wait_for_timeout(2000)
        page.screenshot(path=str(ARTIFACTS / "landing.png"))
        body = page.inner_text("body")
        assert "Runs" in body and "matching runs" in body  # the runs table, not the GenAI overview
        for candidate in ("tfidf-word-cnb", "tfidf-word-svm"):
            assert candidate in body
        close = page.locator("[aria-label='Close']").first  # the Assistant panel of a fresh profile
        if close.count():
            close.click()
            page.wait_for_timeout(1500)
        page.screenshot(path=str(ARTIFACTS / "runs.png"))
        width = page.viewport_size["width"]
        seen = _headers(page)
        assert LEADERBOARD[0] in seen and seen[LEADERBOARD[0]]["x"] + seen[LEADERBOARD[0]]["width"] <= width
        # the rest of the leaderboard's columns, scrolling the table to the right as a user would
        for _ in range(6):
            if set(LEADERBOARD) <= set(seen):
                break
            page.evaluate(
                "for (const e of document.querySelectorAll('.ag-body-horizontal-scroll-viewport, "
                ".ag-center-cols-viewport')) e.scrollLeft += 400"
            )
            page.wait_for_timeout(500)
            seen.update(_headers(page))
        page.screenshot(path=str(ARTIFACTS / "runs-scrolled.png"))
        assert set(LEADERBOARD) <= set(seen), sorted(seen)
        context.close()
    finally:
        stop(ui)
    assert ui.returncode is not None
