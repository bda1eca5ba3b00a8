"""A streamed answer split into outputs looks like the same answer in one output.

Co streams a long answer as a series of display outputs, each finished block sent once.
JupyterLab lays each output out on its own (margins do not collapse across outputs), so
the cuts must fall where that changes nothing, or take away the margin one output would
collapse. In a real JupyterLab in headless Chromium: the answer streams into several
outputs, then the page shows the whole answer rendered at once in the first output instead,
and every paragraph, item, row, heading and code block must sit exactly where it sat before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from co_kernel.frontend import markdown_to_html

from .jupyterlab import co_lab, open_notebook, run_cell

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _answer() -> str:
    """Every kind of block, each next to every other, as models write them."""
    para = "A paragraph with `code`, **bold** and a [link](https://example.org) in it. " * 3
    items = "\n".join(
        f"- item {n}: a line long enough to wrap, as answers write them" for n in range(20)
    )
    steps = "\n".join(f"{n}. step {n}, with `code` in it" for n in range(1, 30))
    blocks = [
        "# A title",
        para,
        "## A section",
        para,
        "- one item\n- another item\n- a third",
        para,
        "```python\ndef f(x):\n\n    return x + 1\n```",
        para,
        "### A smaller heading",
        "1. first\n2. second",
        "| name | time |\n|---|---|\n| a | 1 ms |\n| b | 2 ms |",
        para,
        "> A quote\n> on two lines.",
        para,
        "---",
        para,
        "```\nplain code\n```",
        "- a list right after code",
        "```\ncode right after a list\n```",
        "```\ncode right after code\n```",
        para,
        items,
        steps,
        "- a list right after a list",
        para,
        items,
        "```python\nx = 1\n```",
        "## Last",
        para,
    ]
    return "\n\n".join(blocks * 2) + "\n"


_LINES = ":is(p, li, tr, pre, h1, h2, h3, hr, blockquote)"
"""What the eye follows down an answer: a cut between the items of a list makes two lists,
so lists are compared by their items."""

_TOPS = f"""cell => {{
    const blocks = [...cell.querySelectorAll('.jp-OutputArea-output .co-markdown {_LINES}')];
    const first = blocks[0].getBoundingClientRect().top;
    return blocks.map(b => Math.round((b.getBoundingClientRect().top - first) * 10) / 10);
}}"""

_AS_ONE = """([cell, html]) => {
    const divs = [...cell.querySelectorAll('.jp-OutputArea-output .co-markdown')];
    for (const div of divs.slice(1)) {
        div.closest('.jp-OutputArea-child').remove();
    }
    divs[0].outerHTML = html;
    return divs.length;
}"""


def test_a_streamed_answer_is_laid_out_as_in_one_output(tmp_path: Path) -> None:
    answer = _answer()
    script: list[dict[str, Any]] = [{"text": answer, "tokens_per_second": 300}]
    with co_lab(tmp_path, ["Show me every kind of block."], script) as co:
        page = co.page
        open_notebook(page, co.url)
        cell = run_cell(page, 0)
        cell.locator(".jp-InputPrompt", has_text="[1]").wait_for(timeout=120_000)
        handle = cell.element_handle()
        split = page.evaluate(_TOPS, handle)
        # The whole answer as one output shows it: rendered at once, no margin taken.
        outputs = page.evaluate(_AS_ONE, [handle, markdown_to_html(answer)])
        assert outputs > 10, "the answer should have streamed into many outputs"
        merged = page.evaluate(_TOPS, handle)
        assert len(split) == len(merged) > 100
        moved = [
            (n, a, b)
            for n, (a, b) in enumerate(zip(split, merged, strict=True))
            if abs(a - b) > 0.5
        ]
        assert not moved, f"blocks sit elsewhere than in one output (index, split, one): {moved}"
