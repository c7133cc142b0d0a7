"""Every relative link in the README and the pages of docs/ reaches a file that exists (and a
heading of it, where the link names one), and docs/index.md lists every page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def links(page: Path) -> list[str]:
    """The link targets of ``page``, code blocks left out."""
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


def anchors(page: Path) -> set[str]:
    """The anchors of ``page``'s headings, as GitHub makes them."""
    found = set()
    for heading in re.findall(
        r"^#+\s+(.*)$", FENCE.sub("", page.read_text(encoding="utf-8")), re.M
    ):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert broken == [], f"{page.name}: links to nothing: {broken}"


def test_the_index_lists_every_page() -> None:
    listed = {target.partition("#")[0] for target in links(DOCS / "index.md")}
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert sorted(pages - listed) == [], "pages missing from docs/index.md"


def test_the_readme_links_to_the_index() -> None:
    assert "docs/index.md" in links(ROOT / "README.md")
