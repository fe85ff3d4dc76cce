"""The README is short and points to the reference pages in docs/: it fits in a couple of screenfuls, links every
reference page its sections moved to, and every relative link of the README and the docs pages (files, images,
#anchors) resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_README_LINES = 250
REFERENCE_PAGES = (  # where the README's reference sections live (issue 28)
    "python-api.md",
    "training.md",
    "evaluation.md",
    "serving.md",
    "page.md",
    "batch-labeling.md",
    "scaling-out.md",
    "reference.md",
    "hardening.md",
    "security.md",
)


def _outside_code(text: str) -> list[str]:
    lines, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            lines.append(line)
    return lines


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a markdown file."""
    anchors = set()
    for line in _outside_code(path.read_text(encoding="utf-8")):
        if match := re.match(r"#{1,6} (.*)", line):
            anchors.add(re.sub(r"[^\w\- ]", "", match[1].strip().lower()).replace(" ", "-"))
    return anchors


def _links(path: Path) -> list[str]:
    return [
        target
        for line in _outside_code(path.read_text(encoding="utf-8"))
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line))  # not inside `code`
        if not re.match(r"[a-z]+:", target)
    ]


def test_the_readme_is_short_and_links_every_reference_page():
    readme = ROOT / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= MAX_README_LINES
    linked = {target.split("#")[0] for target in _links(readme)}
    assert {f"docs/{page}" for page in REFERENCE_PAGES} <= linked


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for page in [ROOT / "README.md", *DOCS]:
        for target in _links(page):
            file, _, anchor = target.partition("#")
            resolved = (page.parent / file).resolve() if file else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
