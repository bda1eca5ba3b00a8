"""Readable Markdown from a web page: the main content, links made absolute."""

from __future__ import annotations

import re
import warnings
from urllib.parse import urljoin

__all__ = ["html_to_markdown"]

# Page furniture that is never the content a reader came for.
_DROP = (
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
    "embed", "form", "button", "input", "select", "textarea", "nav", "aside", "footer",
)  # fmt: skip
_BLANKS = re.compile(r"\n{3,}")


def html_to_markdown(
    html: str | bytes, base_url: str, encoding: str | None = None
) -> tuple[str, str]:
    """(title, Markdown) of the page's main content (``<main>``, ``<article>`` or body)."""
    from bs4 import BeautifulSoup
    from markdownify import ATX, MarkdownConverter

    with warnings.catch_warnings():
        # bs4 warns about input that looks like a file name or XML; a page is what it is.
        warnings.simplefilter("ignore")
        soup = BeautifulSoup(html, "html.parser", from_encoding=encoding)
        title = soup.title.get_text(" ", strip=True) if soup.title else ""
        for tag in soup.find_all(_DROP):
            tag.decompose()
        for tag in soup.find_all(hidden=True):
            tag.decompose()
        for attr, name in (("href", "a"), ("src", "img")):
            for tag in soup.find_all(name):
                value = tag.get(attr)
                if not isinstance(value, str):
                    continue
                if value.startswith(("data:", "javascript:")):
                    del tag[attr]
                else:
                    tag[attr] = urljoin(base_url, value)
        main = soup.find("main") or soup.find("article") or soup.body or soup
        converter = MarkdownConverter(heading_style=ATX, bullets="-", escape_underscores=False)
        markdown = converter.convert_soup(main)
    markdown = _BLANKS.sub("\n\n", markdown).strip()
    return title, markdown
