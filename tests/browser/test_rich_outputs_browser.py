"""A plot made by run_python appears in the cell in JupyterLab and Notebook 7, is saved with
the notebook, and the scripted model's next request carries it as an image part."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from co_kernel.replay import ScriptedModelServer

from .jupyterlab import co_lab, open_notebook, run_cell, save_notebook
from .test_notebook7 import open_notebook as open_in_notebook7
from .test_notebook7 import run_cell as run_in_notebook7

pytestmark = pytest.mark.browser

FIGURE = (
    "import matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(4, 3))\n"
    "plt.bar(['Jul', 'Aug', 'Sep'], [46.8, 33.1, 45.2])\n"
    "plt.title('revenue')"
)


SCRIPT = [
    {"tool_calls": [{"name": "run_python", "arguments": {"code": FIGURE}}]},
    {"expect": {"tool_result_contains": "figure"}, "text": "August dips."},
]


def _sent_an_image(server: ScriptedModelServer) -> bool:
    sent = server.requests[-1]["messages"]
    return any(
        part.get("type") == "image_url"
        for message in sent
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )


def _drawn(cell: Any) -> None:
    image = cell.locator(".jp-OutputArea-output img")
    image.wait_for(timeout=10_000)
    assert image.get_attribute("src", timeout=5_000).startswith("data:image/png;base64,")
    assert image.evaluate("img => img.naturalWidth") > 100


def test_a_plot_from_run_python_is_drawn_in_the_cell_and_sent_to_the_model(
    tmp_path: Path,
) -> None:
    with co_lab(tmp_path, ["Plot the revenue"], SCRIPT) as co:
        page = co.page
        open_notebook(page, co.url)
        cell = run_cell(page, 0)
        approve = page.get_by_role("button", name="Approve", exact=True)
        approve.wait_for(timeout=90_000)
        approve.click()
        cell.get_by_text("August dips.").wait_for(timeout=60_000)
        _drawn(cell)
        assert _sent_an_image(co.server)

        save_notebook(page, co.notebook)
        saved = json.loads(co.notebook.read_text())
        outputs = saved["cells"][0]["outputs"]
        assert any("image/png" in o.get("data", {}) for o in outputs), "saved with the notebook"


@pytest.mark.slow
def test_a_plot_from_run_python_is_drawn_in_notebook7(tmp_path: Path) -> None:
    with co_lab(tmp_path, ["Plot it"], SCRIPT, app="notebook") as co:
        page = co.page
        page.set_default_timeout(60_000)
        open_in_notebook7(page, co.lab, co.notebook.name)
        run_in_notebook7(page, 0)
        page.get_by_role("button", name="Approve", exact=True).click()
        cell = page.locator(".jp-Cell").first
        cell.get_by_text("August dips.").wait_for()
        _drawn(cell)
        assert _sent_an_image(co.server)
