"""The README, CONTRIBUTING.md and docs/ link to files and headings that exist.

The manual is split over several files that link to each other; a renamed heading or a
moved file must fail here, not leave a reader at a dead link.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
# [text](target) and ![alt](target), across a line break in the text too.
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _outside_code(text: str) -> str:
    """The text without fenced blocks and inline code, where a `](` is no link."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`]*`", "", text)


def anchors(path: Path) -> set[str]:
    """GitHub's ids for the headings of a Markdown file."""
    ids = set()
    for heading in re.findall(r"^#+ (.+)$", _outside_code(path.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        ids.add(slug)
    return ids


def links(path: Path) -> list[str]:
    return [t for t in LINK.findall(_outside_code(path.read_text())) if "://" not in t]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_relative_link_reaches_a_file_and_heading(doc: Path) -> None:
    for target in links(doc):
        file, _, anchor = target.partition("#")
        where = (doc.parent / file).resolve() if file else doc
        assert where.exists(), f"{doc.name} links to {target}: no such file"
        if anchor:
            assert where.suffix == ".md", f"{doc.name} links to {target}: not a Markdown file"
            assert anchor in anchors(where), f"{doc.name} links to {target}: no such heading"


def test_the_readme_links_every_page_of_the_manual_and_its_image() -> None:
    linked = {(REPO / t.partition("#")[0]).resolve() for t in links(REPO / "README.md")}
    pages = set((REPO / "docs").glob("*.md"))
    assert pages <= linked, f"pages the README does not link: {sorted(pages - linked)}"
    image = REPO / "docs" / "images" / "co-in-jupyterlab.png"
    assert image in linked and image.stat().st_size < 200_000
