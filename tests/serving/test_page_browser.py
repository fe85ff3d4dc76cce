"""The page at GET / in a real browser: Debian's Chromium (headless) driven by Python Playwright, against
`papertrack serve` on a free loopback port (the server fixture of test_serve_http, stopped by its PID).

Pastes a real abstract, clicks, waits for the bars and checks the top track equals /predict's and that words
are highlighted; drops a small dump and checks the CSV's row count; checks that bad input (empty text, a
30,000-character paste, a binary file, a CSV without an abstract column) shows the problem in plain words; and
that an "unsure" answer shows the ranking first, the prediction set folded, what "unsure" means with the model's
threshold, every area, and is cleared by a later error. Screenshots go to ``test-artifacts/page/``
(``PAPERTRACK_TEST_ARTIFACTS`` overrides the folder).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from papertrack.models.request import unfamiliar_text_warning
from tests.serving.test_unfamiliar_text import CHINESE

pytestmark = pytest.mark.slow

ARTIFACTS = (
    Path(os.environ.get("PAPERTRACK_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts")) / "page"
)
TIMEOUT_MS = 30_000


@pytest.fixture()
def page(browser, server):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
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
    assert page.inner_text("#set-note").startswith(("Confident:", "Unsure:"))
    assert expected["prediction_set"][0] in page.text_content("#set-list")
    assert page.locator("#neighbors li").count() == 5
    page.screenshot(path=str(ARTIFACTS / "page-1280x800.png"), full_page=True)

    # keyboard: Ctrl+Enter in the text box classifies; the second track can be chosen with the keyboard
    page.fill("#abstract", records(trained, 3)[2]["abstract"])
    page.focus("#abstract")
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => document.querySelector('#paper-status').textContent === ''")
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
    assert page.inner_text("#paper-error").startswith("The abstract is empty")  # plain words:
    assert "400" not in page.inner_text("#paper-error") and "invalid request" not in page.inner_text("#paper-error")

    page.fill("#abstract", "word " * 6_000)  # 30,000 characters
    page.click("#classify")
    page.wait_for_function("() => document.querySelector('#paper-error').textContent.includes('20,000')")
    assert "abstract" in page.inner_text("#paper-error")
    page.screenshot(path=str(ARTIFACTS / "page-error-long.png"))

    page.set_input_files(
        "#dump-file",
        files=[{"name": "blob.bin", "mimeType": "application/octet-stream", "buffer": bytes(range(256)) * 64}],
    )
    page.wait_for_selector("#dump-error:not([hidden])")
    assert page.inner_text("#dump-error").startswith("blob.bin")
    page.set_input_files(
        "#dump-file",
        files=[{"name": "papers.csv", "mimeType": "text/csv", "buffer": b"title,text\nA paper,some text\n"}],
    )
    page.wait_for_function("() => document.querySelector('#dump-error').textContent.includes('papers.csv')")
    assert "abstract" in page.inner_text("#dump-error")
    assert page.is_hidden("#dump-download") and page.is_hidden("#dump-progress")


def test_drop_a_dump_get_a_csv(page, trained):
    rows = records(trained, 7)
    lines = [json.dumps({"id": r["id"], "abstract": r["abstract"], "title": r["title"]}) for r in rows]
    lines.insert(3, json.dumps({"abstract": ""}))  # skipped and listed
    lines.insert(5, json.dumps({"id": "whole", "abstract": "graph " * 4000}))  # rejected by the service, listed
    lines.append(json.dumps({"id": "zh", "abstract": CHINESE}))  # labeled, with a warning
    content = "\n".join(lines) + "\n"
    transfer = page.evaluate_handle(
        "(text) => { const dt = new DataTransfer(); dt.items.add(new File([text], 'dump.jsonl')); return dt; }", content
    )
    page.dispatch_event("#drop-zone", "drop", {"dataTransfer": transfer})
    page.wait_for_selector("#dump-download:not([hidden])")
    assert "8 papers labeled, 1 rejected" in page.inner_text("#dump-status")
    skipped = page.locator("#dump-skipped li").all_inner_texts()
    assert len(skipped) == 2 and "not labeled: abstract: abstract has 23,999 characters" in skipped[1], (
        skipped
    )  # (trimmed)
    assert "paste the abstract, not the whole paper" in skipped[1]
    with page.expect_download() as download:
        page.click("#dump-download")
    path = download.value.path()
    table = list(csv.DictReader(io.StringIO(Path(path).read_text(encoding="utf-8"))))
    assert len(table) == 8
    assert [row["id"] for row in table] == [r["id"] for r in rows] + ["zh"]
    assert [row["warning"] for row in table][-2:] == ["", unfamiliar_text_warning(0.0)]
    assert all(row["track_1"] and row["prediction_set"] and row["confident"] in ("true", "false") for row in table)
    shutil.copy(path, ARTIFACTS / "dump.labeled.csv")
    page.screenshot(path=str(ARTIFACTS / "page-dump.png"), full_page=True)


def test_an_unsure_answer_ranking_first_set_folded_threshold_explained(page, server, trained):
    import httpx

    url = server["url"]
    meta = httpx.get(f"{url}/metadata", timeout=10).json()
    assert set(meta["confidence"]) == {"top1_threshold", "target_precision", "coverage"}
    unsure, seen = None, []
    vague = ["We propose a method and evaluate it on several tasks.", "This paper studies a problem and a solution."]
    for abstract in vague + [record["abstract"] for record in records(trained, 200)]:
        answer = httpx.post(f"{url}/predict", json={"abstract": abstract, "top_k": 5}, timeout=30).json()
        seen.append((answer["confident"], answer["tracks"][0]["probability"], len(answer["prediction_set"])))
        if not answer["confident"] and len(answer["prediction_set"]) > 1:
            unsure = (abstract, answer)
            break
    if unsure is None:
        pytest.skip(f"the test model is confident on every paper tried: {meta['confidence']} {seen[:10]}")
    abstract, expected = unsure
    page.fill("#abstract", abstract)
    page.click("#classify")
    page.wait_for_selector("#tracks li .bar")
    assert page.inner_text("#badge") == "unsure"
    # the ranking comes first: above the note and the prediction set
    top = lambda selector: page.locator(selector).bounding_box()["y"]  # noqa: E731
    assert top("#tracks") < top("#set-note") < top("#set-details")
    assert page.inner_text("#tracks li:first-child .name") == f"1. {expected['tracks'][0]['label']}"
    # one line saying what "unsure" means, with the model's threshold
    note = page.inner_text("#set-note")
    threshold = meta["confidence"]["top1_threshold"]
    assert note.startswith("Unsure: ") and "\n" not in note
    if threshold >= 1:  # a model that is never confident (the tiny test model may be) says so
        assert "never confident" in note
    else:
        shown = f"{100 * threshold:.0f}%" if threshold >= 0.1 else f"{100 * threshold:.1f}%"  # as the page writes it
        assert f"confidence threshold of {shown}" in note
    # the prediction set: "N tracks", folded until opened
    n = len(expected["prediction_set"])
    assert page.evaluate("document.querySelector('#set-details').tagName") == "DETAILS"
    assert page.inner_text("#set-summary").startswith(f"Prediction set: {n} tracks")
    assert not page.evaluate("document.querySelector('#set-details').open")
    assert not page.locator("#set-list").is_visible()
    page.click("#set-summary")
    assert page.locator("#set-list li").all_inner_texts() == expected["prediction_set"]
    # every area, not the first six
    assert page.locator("#areas li").count() == len(meta["areas"]) == len(expected["areas"])
    page.screenshot(path=str(ARTIFACTS / "page_unsure.png"), full_page=True)

    # an error afterwards clears that paper's results, and says what is wrong in plain words
    page.fill("#abstract", "")
    page.click("#classify")
    page.wait_for_selector("#paper-error:not([hidden])")
    assert page.inner_text("#paper-error").startswith("The abstract is empty")
    assert page.is_hidden("#results") and page.locator("#tracks li").count() == 0
    assert page.text_content("#set-note") == "" and page.locator("#areas li").count() == 0


def test_text_the_model_does_not_know_gets_a_badge(page):
    page.fill("#abstract", CHINESE)
    page.click("#classify")
    page.wait_for_selector("#unfamiliar:not([hidden])")
    assert page.inner_text("#unfamiliar") == "unfamiliar text"
    assert page.inner_text("#warning-note") == f"Warning: {unfamiliar_text_warning(0.0)}."
    assert page.locator("#tracks li").count() >= 1  # still answered
    page.screenshot(path=str(ARTIFACTS / "page-unfamiliar.png"))
    page.fill("#abstract", "We propose a sparse attention mechanism for transformers on long sequences.")
    page.click("#classify")
    page.wait_for_selector("#unfamiliar[hidden]", state="attached")
    assert page.inner_text("#warning-note") == ""
