"""Take the README's screenshot: a streamed answer and an approval card in real JupyterLab.

Run from the checkout's root (Debian's Chromium, a scripted model, no key, no network):

    .venv/bin/python -m tests.browser.readme_screenshot docs/images/co-in-jupyterlab.png

The first cell reads a file (a collapsed tool card) and streams a Markdown answer; the
second asks to run a shell command and waits at its card, which is when the picture is
taken. Nothing is approved, so the command never runs. The sandbox image is
``CO_SANDBOX_IMAGE`` (default ``co-sandbox-test:bookworm``, which scripts/test.sh builds);
the card's emoji needs a colour emoji font (Debian's ``fonts-noto-color-emoji``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .jupyterlab import close_shared_browser, co_lab, open_notebook, run_cell

EXPENSES = """date,category,amount
2026-01-04,rent,950
2026-01-12,food,212.40
2026-02-03,rent,950
2026-02-19,travel,480
2026-02-21,food,198.10
2026-03-02,rent,950
2026-03-15,food,231.75
"""

ANSWER = """February was the most expensive month, mostly because of one trip:

| month | rent | food | travel | total |
|---|---:|---:|---:|---:|
| 2026-01 | 950 | 212.40 | | **1,162.40** |
| 2026-02 | 950 | 198.10 | 480 | **1,628.10** |
| 2026-03 | 950 | 231.75 | | **1,181.75** |

Rent is flat; food moves by about 10 %."""

PLOT = "python plot_months.py expenses.csv --out months.png"

SCRIPT = [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "expenses.csv"}}]},
    {"expect": {"tool_result_contains": "travel"}, "text": ANSWER},
    {
        "text": "I will draw the monthly totals with pandas.",
        "tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": PLOT}}],
    },
]

CELLS = [
    "Which month did we spend the most in? The data is in expenses.csv.",
    "Plot the monthly totals as months.png",
]


def take(out: Path, image: str) -> None:
    with tempfile.TemporaryDirectory(prefix="co-screenshot-") as tmp:
        # The card as a person sees it: commands run in the Docker sandbox.
        sandbox = {"CO_SANDBOX": "docker", "CO_SANDBOX_IMAGE": image}
        with co_lab(Path(tmp), CELLS, SCRIPT, **sandbox) as co:
            (co.notebook.parent / "expenses.csv").write_text(EXPENSES)
            page = co.page
            page.set_viewport_size({"width": 1000, "height": 760})
            open_notebook(page, co.lab.url(f"lab/tree/{co.notebook.name}", reset=""))
            page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
            first = run_cell(page, 0)
            first.get_by_text("Rent is flat").wait_for(timeout=90_000)
            second = run_cell(page, 1)
            second.get_by_role("button", name="Approve", exact=True).wait_for(timeout=60_000)
            page.mouse.move(0, 0)
            page.wait_for_timeout(500)
            page.locator("#jp-main-dock-panel").screenshot(path=str(out))
    close_shared_browser()


if __name__ == "__main__":
    take(Path(sys.argv[1]), os.environ.get("CO_SANDBOX_IMAGE", "co-sandbox-test:bookworm"))
