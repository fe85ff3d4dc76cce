"""One CSV format for the page and the CLI: the page's CSV (page.js, run in Chromium) is byte for byte the CSV
`papertrack label` writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CHROMIUM, CHROMIUM_ARGS

PAGE_JS = Path(__file__).resolve().parents[2] / "serving" / "http" / "page" / "static" / "page.js"


@pytest.mark.slow  # mock answers, no model, no server — but Chromium starts: 2.3 s (--durations)
def test_the_page_csv_is_the_cli_csv():
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is missing")
    playwright_api = pytest.importorskip("playwright.sync_api")
    from papertrack.features.ingest import Record
    from papertrack.models.answer import EXTRA_FIELDS
    from papertrack.serving.batch.labeler.rows import RowFormat

    def answer(probabilities, prediction_set, confident):
        names = ["Theory · Learning Theory", "Deep Learning · Theory", '=HYPERLINK("x")']
        return {
            "tracks": [
                {"label": n, "area": n.split(" · ")[0], "subarea": None, "probability": p}
                for n, p in zip(names, probabilities)
            ],
            "areas": [
                {"area": "Theory", "probability": probabilities[0] + 1e-17},
                {"area": "Deep", "probability": 0.0},
            ],
            "prediction_set": prediction_set,
            "confident": confident,
        }

    papers = [
        {
            "id": "=cmd|' /C calc'!A0",
            "line": 3,
            "title": 'A "quoted", title\nwith a newline',
            "label": "Theory · Learning Theory",
            "answer": answer([0.9999955112596849, 2.8893813152852626e-07, 5e-05], ["Theory · Learning Theory"], True),
        },
        {
            "id": "p2",
            "line": 9,
            "title": None,
            "label": None,
            "answer": {
                **answer([0.5, 0.25, 0.0001], ["Theory · Learning Theory", "Deep Learning · Theory"], False),
                "warning": 'only 12% of the abstract\'s words are known to the model, "quoted"',
            },
        },
        {
            "id": "-p3",
            "line": 12,
            "title": "@home",
            "label": "Deep Learning · Theory",
            "answer": answer([1.0, 1e-300, 0.123456789012345678], [], False),
        },
        {"id": "p4", "line": 15, "title": "rejected", "label": None, "answer": {"error": "abstract too long"}},
    ]
    rows = RowFormat("csv", 3, extras=EXTRA_FIELDS)
    kept = [p for p in papers if "error" not in p["answer"]]
    expected = (
        rows.header()
        + rows.rows(
            (Record(p["id"], "abstract", p["title"], p["label"], None, None, "dump.jsonl", p["line"]), p["answer"])
            for p in kept
        )
    ).decode("utf-8")

    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_content("<!doctype html><html><body></body></html>")
            page.add_script_tag(content=PAGE_JS.read_text(encoding="utf-8"))  # wire() fails here: no form
            produced = page.evaluate(
                "(papers) => csvRows(papers.map((p) => ({id: p.id, line: p.line, title: p.title, label: p.label})),"
                " papers.map((p) => p.answer), 'dump.jsonl')",
                papers,
            )
        finally:
            browser.close()
    assert produced == expected
