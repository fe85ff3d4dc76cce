"""The OpenAPI page at /docs renders and loads nothing from the network (issue 20).

``/docs.json`` must be JSON without a duplicated key anywhere (Swagger UI refuses to render "duplicated mapping
key"; Python's ``json`` silently keeps the last, so this parses with a hook that raises). The page itself runs
only same-origin scripts; in Chromium (Debian's, driven by Python Playwright, against `papertrack serve` on a
free loopback port) it shows every endpoint while no request leaves 127.0.0.1. `papertrack serve`'s banner
names /docs as the OpenAPI page.
"""

from __future__ import annotations

import json
import re

import pytest


def strict_json(text: str):
    def no_duplicates(pairs):
        keys = [key for key, _ in pairs]
        duplicated = sorted({key for key in keys if keys.count(key) > 1})
        if duplicated:
            raise ValueError(f"duplicated key(s) {duplicated} in an object with keys {keys}")
        return dict(pairs)

    return json.loads(text, object_pairs_hook=no_duplicates)


def test_strict_json_sees_duplicates():
    with pytest.raises(ValueError, match="duplicated"):
        strict_json('{"a": {"400": 1, "400": 2}}')


def test_the_spec_has_no_duplicated_key(client):
    response = client.get("/docs.json")
    assert response.status_code == 200
    spec = strict_json(response.text)
    for path in ("/predict", "/predict_batch", "/explain", "/drift"):
        responses = spec["paths"][path]["post"]["responses"]
        assert responses["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
        assert all(isinstance(status, str) for status in responses)


def test_the_spec_links_nothing_the_page_would_load_from_elsewhere(client):
    spec = client.get("/docs.json").json()
    text = json.dumps(spec["info"])
    assert "http" not in text and spec["info"]["title"] == "papertrack"
    assert "![" not in json.dumps(spec)  # no markdown image anywhere (descriptions are rendered as markdown)


def test_the_docs_page_loads_only_same_origin_files(client):
    html = client.get("/docs").text
    assert "googletagmanager" not in html.lower()
    assert not re.search(r"""<(script|link|img|iframe)[^>]*(src|href)=["']?(https?:)?//""", html, re.I)
    assert "<script>" not in html  # no inline script
    for path in re.findall(r"""(?:src|href)="(/[^"]+)\"""", html):
        assert client.get(path).status_code == 200, path


# --------------------------------------------------------------------------- in a browser


@pytest.mark.slow
def test_docs_render_in_chromium_without_leaving_loopback(browser, server):
    context = browser.new_context()
    elsewhere, violations, problems = [], [], []
    context.on(
        "request",
        lambda request: None if request.url.startswith(server["url"] + "/") else elsewhere.append(request.url),
    )
    context.add_init_script(
        "document.addEventListener('securitypolicyviolation', "
        "e => console.error('CSP violation', e.violatedDirective, e.blockedURI))"
    )
    page = context.new_page()
    page.on("console", lambda message: violations.append(message.text) if "CSP" in message.text else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    try:
        page.goto(server["url"] + "/docs")
        page.wait_for_selector(".opblock", timeout=30_000)
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        assert {"/predict", "/predict_batch", "/explain", "/drift", "/metadata"} <= {p.strip() for p in paths}
        assert page.locator(".errors-wrapper").count() == 0  # Swagger UI's "unable to render" box
        page.click("#operations-Service_APIs-papertrack__predict .opblock-summary")  # an operation expands
        page.wait_for_selector("#operations-Service_APIs-papertrack__predict .responses-table")
        page.wait_for_timeout(500)
    finally:
        context.close()
    assert elsewhere == [] and violations == [] and problems == []


@pytest.mark.slow
def test_the_serve_banner_points_to_the_pages(server):
    banner = next(line for line in server["log"].read_text().splitlines() if line.startswith("Serving "))
    assert "OpenAPI page at /docs" in banner and "OpenAPI page at /," not in banner
