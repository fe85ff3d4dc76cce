"""Take docs/page.png: the page of a running service after classifying one abstract (headless Debian Chromium).

    .venv/bin/python docs/screenshot.py --url http://127.0.0.1:3000 [--pick 85] [--out docs/page.png]

The abstract is the ``--pick``-th (from 0) abstract of at most 1,300 characters of the unlabeled corpus
(not a training abstract).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from shared_data import unlabeled_abstracts  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--pick", type=int, default=85)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("page.png"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    abstract = unlabeled_abstracts(args.pick + 1, max_chars=1300)[args.pick]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(args.url.rstrip("/") + "/")
        page.fill("#abstract", abstract)
        page.click("#classify")
        page.wait_for_selector("#tracks li .bar")
        page.screenshot(path=str(args.out), full_page=True)
        browser.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
