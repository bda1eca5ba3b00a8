"""An answer's tables and code blocks look like the same Markdown in a Markdown cell.

Co sends an answer as HTML, which the page styles as an HTML output: table cells flush
right (for data frames), code blocks without margins. In JupyterLab, in Notebook 7 and
in the notebook's nbconvert HTML export (where no extension of Co's styles the page), the
answer and a Markdown cell holding the same text are measured in the same page: each
cell's alignment (the table's own ``:---:`` kept), a code block's gaps to the paragraphs
around it and its indent (in the export, as in JupyterLab: nbconvert's own Markdown code
has no gaps). A magic's table (``%help``) reads the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .jupyterlab import co_lab, open_notebook, run_cell, save_notebook
from .test_no_script import _nbconvert, html_path
from .test_notebook7 import open_notebook as open_notebook7
from .test_notebook7 import run_cell as run_cell7

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ANSWER = (
    "Before the table.\n\n"
    "| a long name | centred | count |\n"
    "|---|:---:|---:|\n"
    "| x | mid | 1 |\n"
    "| a longer value here | c | 22 |\n\n"
    "Some code:\n\n"
    "```python\ndef f(x):\n    return x\n```\n\n"
    "After the code.\n"
)

# Computed styles and positions inside ``root``: every header and data cell's alignment
# (as left/center/right, however the browser spells it) and the code block's place.
_LOOKS = """root => {
    const side = a => a.includes('center') ? 'center'
        : (a.includes('right') || a === 'end') ? 'right' : 'left';
    const align = sel => [...root.querySelectorAll(sel)]
        .map(e => side(getComputedStyle(e).textAlign));
    // The block is the code's top-level element (nbconvert wraps a Markdown cell's pre).
    let pre = root.querySelector('pre');
    while (pre.parentElement !== root) pre = pre.parentElement;
    const before = pre.previousElementSibling, after = pre.nextElementSibling;
    const box = e => e.getBoundingClientRect();
    const round = x => Math.round(x * 10) / 10;
    return {
        th: align('th'),
        td: align('td'),
        above: round(box(pre).top - box(before).bottom),
        below: round(box(after).top - box(pre).bottom),
        indent: round(box(pre).left - box(before).left),
    };
}"""

_EXPECTED_ALIGNMENT = {"td": ["left", "center", "right"] * 2}


def _notebook_with_markdown_cell(path: Path) -> None:
    """Add a Markdown cell holding the answer's own text, for the page to draw beside it."""
    notebook = json.loads(path.read_text())
    notebook["cells"].append(
        {"cell_type": "markdown", "id": "md", "metadata": {}, "source": ANSWER}
    )
    path.write_text(json.dumps(notebook, indent=1))


def _compare(page: Any, answer: Any, markdown: Any, where: str, spacing: Any = None) -> Any:
    """Assert the answer's looks match the Markdown cell's; returns the Markdown cell's.

    ``spacing``: the code block's spacing to expect instead of this Markdown cell's.
    """
    got = page.evaluate(_LOOKS, answer)
    want = page.evaluate(_LOOKS, markdown)
    assert got["td"] == _EXPECTED_ALIGNMENT["td"] == want["td"], (where, got, want)
    assert got["th"] == want["th"], (where, got, want)
    spaced = spacing or want
    for key in ("above", "below", "indent"):
        assert abs(got[key] - spaced[key]) <= 1, (where, key, got, spaced)
    assert spaced["indent"] > 0 and spaced["below"] > 10, (where, spaced)
    return want


def test_answers_look_like_markdown_cells_in_jupyterlab_and_the_export(tmp_path: Path) -> None:
    with co_lab(tmp_path, ["Show a table and code.", "%help"], [{"text": ANSWER}]) as co:
        _notebook_with_markdown_cell(co.notebook)
        page = co.page
        open_notebook(page, co.url)
        cell = run_cell(page, 0)
        cell.get_by_text("After the code.").wait_for(timeout=120_000)
        cell.locator(".jp-InputPrompt", has_text="[1]").wait_for(timeout=120_000)
        answer = cell.locator(".co-markdown").element_handle()
        markdown = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown").element_handle()
        in_lab = _compare(page, answer, markdown, "jupyterlab")

        # A magic's table: its data cells sit where a Markdown cell's do.
        magic = run_cell(page, 1)
        magic.locator(".jp-InputPrompt", has_text="[2]").wait_for(timeout=60_000)
        cells = magic.locator(".co-markdown td")
        assert cells.count() > 4
        sides = cells.evaluate_all("cells => cells.map(c => getComputedStyle(c).textAlign)", None)
        assert set(sides) == {"left"}, sides

        save_notebook(page, co.notebook)
        _nbconvert(co.notebook, tmp_path / "export")
        page.goto(html_path(tmp_path / "export").as_uri())
        page.get_by_text("After the code.").first.wait_for()
        exported = page.locator(".jp-OutputArea-output .co-markdown").first.element_handle()
        markdown = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown").element_handle()
        # nbconvert draws a Markdown cell's code flush against the next paragraph (its
        # highlight wrapper loses JupyterLab's block margins): the answer keeps the spacing
        # it had in JupyterLab, and its tables the export's Markdown alignment.
        _compare(page, exported, markdown, "nbconvert export", spacing=in_lab)


def test_answers_look_like_markdown_cells_in_notebook7(tmp_path: Path) -> None:
    with co_lab(tmp_path, ["Show a table and code."], [{"text": ANSWER}], app="notebook") as co:
        _notebook_with_markdown_cell(co.notebook)
        page = co.page
        page.set_default_timeout(60_000)
        open_notebook7(page, co.lab, co.notebook.name)
        run_cell7(page, 0)
        page.locator(".jp-OutputArea-output .co-markdown").get_by_text("After the code.").wait_for(
            timeout=120_000
        )
        answer = page.locator(".jp-OutputArea-output .co-markdown").element_handle()
        markdown = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown").element_handle()
        _compare(page, answer, markdown, "notebook 7")
