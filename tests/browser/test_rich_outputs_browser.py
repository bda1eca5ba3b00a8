"""A plot made by run_python appears in the cell in JupyterLab, is saved with the notebook,
and the scripted model's next request carries it as an image part (issue 37 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .jupyterlab import co_lab, open_notebook, run_cell, save_notebook

pytestmark = pytest.mark.browser

FIGURE = (
    "import matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(4, 3))\n"
    "plt.bar(['Jul', 'Aug', 'Sep'], [46.8, 33.1, 45.2])\n"
    "plt.title('revenue')"
)


def test_a_plot_from_run_python_is_drawn_in_the_cell_and_sent_to_the_model(
    tmp_path: Path,
) -> None:
    script = [
        {"tool_calls": [{"name": "run_python", "arguments": {"code": FIGURE}}]},
        {"expect": {"tool_result_contains": "figure"}, "text": "August dips."},
    ]
    with co_lab(tmp_path, ["Plot the revenue"], script) as co:
        page = co.page
        open_notebook(page, co.url)
        cell = run_cell(page, 0)
        approve = page.get_by_role("button", name="Approve", exact=True)
        approve.wait_for(timeout=90_000)
        approve.click()
        cell.get_by_text("August dips.").wait_for(timeout=60_000)
        image = cell.locator(".jp-OutputArea-output img")
        image.wait_for(timeout=10_000)
        assert image.get_attribute("src", timeout=5_000).startswith("data:image/png;base64,")
        assert image.evaluate("img => img.naturalWidth") > 100

        sent = co.server.requests[-1]["messages"]
        parts = [
            part
            for message in sent
            if isinstance(message.get("content"), list)
            for part in message["content"]
        ]
        assert any(p.get("type") == "image_url" for p in parts), json.dumps(sent)[:500]

        save_notebook(page, co.notebook)
        saved = json.loads(co.notebook.read_text())
        outputs = saved["cells"][0]["outputs"]
        assert any("image/png" in o.get("data", {}) for o in outputs), "saved with the notebook"
