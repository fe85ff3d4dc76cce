"""Screenshot of MLflow's compare view of the latest sweep's candidates (CV and shift metrics side by side),
for the README. Starts ``mlflow server`` on 127.0.0.1 for the papertrack store, drives headless Chromium
with playwright, writes a PNG, stops the server.

    pip install playwright && apt-get install -y chromium       # Chromium from the distribution
    PAPERTRACK_HOME=/tmp/sweep-full .venv/bin/python benchmarks/screenshot_mlflow.py docs/mlflow-compare.png
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
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=1400)
    args = parser.parse_args()

    import mlflow
    from playwright.sync_api import sync_playwright

    from papertrack import settings, store

    uri = store.configure()
    experiment = mlflow.get_experiment_by_name(settings.EXPERIMENT_NAME)
    sweep = mlflow.search_runs(
        [experiment.experiment_id],
        "tags.`papertrack.kind` = 'sweep'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
        output_format="list",
    )[0]
    runs = mlflow.search_runs(
        [experiment.experiment_id],
        f"tags.`mlflow.parentRunId` = '{sweep.info.run_id}'",
        order_by=["metrics.shift_label_top3 DESC"],
        output_format="list",
    )
    ids = [r.info.run_id for r in runs]
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
        url = f"{base}/#/compare-runs?runs={json.dumps(ids)}&experiments={json.dumps([experiment.experiment_id])}"
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=args.chromium,
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.goto(url, wait_until="networkidle", timeout=120_000)
            page.wait_for_timeout(4000)
            # the metrics table is what matters: close the assistant panel, fold the plot and the params
            for label in ("Visualizations", "Parameters", "Artifacts", "Tags"):
                header = page.get_by_text(label, exact=True).first
                if header.count():
                    header.click()
            close = page.locator("[aria-label='Close']").first
            if close.count():
                close.click()
            page.wait_for_timeout(1000)
            # let the metrics table show every row instead of its own (virtualised) scroll box
            expand = """() => { for (const el of document.querySelectorAll('main *, #root *')) {
                const style = getComputedStyle(el);
                if (['auto', 'scroll', 'hidden'].includes(style.overflowY) && el.scrollHeight > el.clientHeight + 4
                    && el.clientHeight < 900) { el.style.maxHeight = 'none'; el.style.height = 'auto'; } } }"""
            for _ in range(3):
                page.evaluate(expand)
                page.wait_for_timeout(800)
                page.mouse.move(600, 1000)
                page.mouse.wheel(0, 400)
                page.wait_for_timeout(800)
            page.evaluate("window.scrollTo(0, 0)")
            page.wait_for_timeout(1000)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=True)
            browser.close()
        print(f"wrote {args.out} ({len(ids)} runs of sweep {sweep.info.run_id})")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


if __name__ == "__main__":
    main()
