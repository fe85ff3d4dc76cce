"""The page at GET / in a real browser: Debian's Chromium (headless) driven by Python Playwright, against
`papertrack serve` on a free loopback port (the server fixture of test_serve_http, stopped by its PID).

Pastes a real abstract, clicks, waits for the bars and checks the top track equals /predict's and that words
are highlighted; drops a small dump and checks the CSV's row count; and checks that bad input (empty text, a
30,000-character paste, a binary file, a CSV without an abstract column) shows the API's message. Screenshots
go to ``test-artifacts/page/`` (``PAPERTRACK_TEST_ARTIFACTS`` overrides the folder).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.test_serve_http import server, server_env  # noqa: F401  the running service

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(os.environ.get("PAPERTRACK_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts")) / "page"
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.skip("Debian's Chromium is missing: apt-get install -y chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Python Playwright is missing: .venv/bin/pip install -e '.[dev]' (no browser download needed)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture()
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"] + "/")
    page.wait_for_selector("#model-info:not(:text('loading'))")
    yield page
    context.close()


def records(trained, n):
    with open(trained["data"], encoding="utf-8") as f:
        return [json.loads(line) for line, _ in zip(f, range(n))]


def test_paste_click_see_tracks_highlights_and_neighbours(page, server, trained):
    import httpx

    abstract = records(trained, 12)[11]["abstract"]
    expected = httpx.post(server["url"] + "/predict", json={"abstract": abstract, "top_k": 5}, timeout=30).json()
    page.fill("#abstract", abstract)
    page.click("#classify")
    page.wait_for_selector("#tracks li .bar")
    first = page.inner_text("#tracks li:first-child .name")
    assert first == f"1. {expected['tracks'][0]['label']}"
    assert page.locator("#tracks li").count() == 5
    assert page.locator("#areas li").count() >= 1
    marks = page.locator("#highlighted mark")
    assert marks.count() > 0
    term_words = page.inner_text("#terms").split()
    assert marks.first.inner_text().lower() in " ".join(term_words).lower()
    assert page.inner_text("#badge") in ("confident", "unsure")
    assert page.inner_text("#set-note").startswith(("Prediction set:", "Unsure"))
    assert expected["prediction_set"][0] in page.inner_text("#set-note")
    assert page.locator("#neighbors li").count() == 5
    page.screenshot(path=str(ARTIFACTS / "page-1280x800.png"), full_page=True)

    # keyboard: Ctrl+Enter in the text box classifies; the second track can be chosen with the keyboard
    page.fill("#abstract", records(trained, 3)[2]["abstract"])
    page.focus("#abstract")
    page.keyboard.press("Control+Enter")
    page.wait_for_function("document.querySelector('#paper-status').textContent === ''")
    page.focus("#tracks li:nth-child(2) .track")
    page.keyboard.press("Enter")
    assert page.get_attribute("#tracks li:nth-child(2) .track", "aria-pressed") == "true"

    # phone width: readable, nothing wider than the screen
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(ARTIFACTS / "page-phone-390.png"), full_page=True)


def test_bad_input_shows_the_api_message(page):
    page.fill("#abstract", "   ")
    page.click("#classify")
    page.wait_for_selector("#paper-error:not([hidden])")
    assert "abstract is empty" in page.inner_text("#paper-error")
    assert "400" in page.inner_text("#paper-error")

    page.fill("#abstract", "word " * 6_000)  # 30,000 characters
    page.click("#classify")
    page.wait_for_function("document.querySelector('#paper-error').textContent.includes('20000')")
    assert "abstract" in page.inner_text("#paper-error")
    page.screenshot(path=str(ARTIFACTS / "page-error-long.png"))

    page.set_input_files("#dump-file", files=[{"name": "blob.bin", "mimeType": "application/octet-stream",
                                               "buffer": bytes(range(256)) * 64}])
    page.wait_for_selector("#dump-error:not([hidden])")
    assert page.inner_text("#dump-error").startswith("400: blob.bin")
    page.set_input_files("#dump-file", files=[{"name": "papers.csv", "mimeType": "text/csv",
                                               "buffer": b"title,text\nA paper,some text\n"}])
    page.wait_for_function("document.querySelector('#dump-error').textContent.includes('papers.csv')")
    assert "abstract" in page.inner_text("#dump-error")
    assert page.is_hidden("#dump-download") and page.is_hidden("#dump-progress")


def test_drop_a_dump_get_a_csv(page, trained):
    rows = records(trained, 7)
    lines = [json.dumps({"id": r["id"], "abstract": r["abstract"], "title": r["title"]}) for r in rows]
    lines.insert(3, json.dumps({"abstract": ""}))  # skipped and listed
    content = "\n".join(lines) + "\n"
    transfer = page.evaluate_handle(
        "(text) => { const dt = new DataTransfer(); dt.items.add(new File([text], 'dump.jsonl')); return dt; }",
        content)
    page.dispatch_event("#drop-zone", "drop", {"dataTransfer": transfer})
    page.wait_for_selector("#dump-download:not([hidden])")
    assert "7 papers labeled" in page.inner_text("#dump-status")
    assert page.locator("#dump-skipped li").count() == 1
    with page.expect_download() as download:
        page.click("#dump-download")
    path = download.value.path()
    table = list(csv.DictReader(io.StringIO(Path(path).read_text(encoding="utf-8"))))
    assert len(table) == 7
    assert [row["id"] for row in table] == [r["id"] for r in rows]
    assert all(row["track_1"] and row["prediction_set"] and row["confident"] in ("true", "false") for row in table)
    shutil.copy(path, ARTIFACTS / "dump.labeled.csv")
    page.screenshot(path=str(ARTIFACTS / "page-dump.png"), full_page=True)
