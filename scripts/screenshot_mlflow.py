"""Screenshot of MLflow's runs table as ``papertrack train`` / ``papertrack runs`` link to it: the latest sweep's
candidates, best first, with their metric columns (the view stored with the experiment), opened in a fresh
Chromium profile, where MLflow would otherwise show its GenAI overview. Starts ``mlflow server`` on 127.0.0.1
for the papertrack store, drives headless Chromium with playwright, checks what the page shows, writes a PNG,
stops the server.

    pip install playwright && apt-get install -y chromium       # Chromium from the distribution
    PAPERTRACK_HOME=/tmp/sweep-full .venv/bin/python scripts/screenshot_mlflow.py docs/mlflow-runs.png
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--width", type=int, default=2000)
    parser.add_argument("--height", type=int, default=480)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from papertrack import store
    from papertrack.training.runs_link import RUNS_VIEW_KEY, SHARED_VIEW_TAG, runs_view_url

    opened = store.open()
    uri = opened.tracking_uri
    experiment = opened.experiment()
    if SHARED_VIEW_TAG + RUNS_VIEW_KEY not in experiment.tags:
        raise SystemExit("the store has no runs view: run papertrack train with this version first")
    view = json.loads(experiment.tags[SHARED_VIEW_TAG + RUNS_VIEW_KEY])
    columns = [c.split("`")[1] for c in view["selectedColumns"] if c.startswith("metrics.")]
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            uri,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(base + "/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise SystemExit("mlflow server did not start")
        url = runs_view_url(base, experiment.experiment_id, RUNS_VIEW_KEY)
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=args.chromium,
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            context = browser.new_context(viewport={"width": args.width, "height": args.height})  # a fresh profile
            page = context.new_page()
            page.goto(url, wait_until="networkidle", timeout=120_000)
            page.get_by_role("columnheader", name=columns[0]).first.wait_for(timeout=120_000)
            page.wait_for_timeout(3000)
            close = page.locator("[aria-label='Close']").first  # the assistant panel, open in a fresh profile
            if close.count():
                close.click()
                page.wait_for_timeout(1000)
            headers = set(page.locator("[role=columnheader]").all_inner_texts())
            missing = [c for c in columns if c not in headers]
            body = page.inner_text("body")
            if missing or "Model training" not in body:
                raise SystemExit(f"the runs view did not open as expected: missing columns {missing}")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=True)
            browser.close()
        print(f"wrote {args.out}: {url} shows the columns {', '.join(columns)}")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


if __name__ == "__main__":
    main()
