"""Headless Chromium driving JupyterLab (Playwright), and notebooks for it to open.

The server itself comes from ``tests/support/lab_server.py``.

Chromium is Debian's (``/usr/bin/chromium``); Playwright never downloads a browser.
"""

from __future__ import annotations

import atexit
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec
from ..support.lab_server import JupyterServer, start_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Each new window (a test's context) otherwise preloads the omnibox popup's WebUI in a
    # renderer of its own, and compositing crosses to a GPU process: together about 1.5 s
    # of CPU per JupyterLab page load, measured on this machine. Tests see neither.
    "--disable-features=PreloadTopChromeWebUI,WebUIOmniboxPopup,WebUIOmniboxAimPopup",
    "--in-process-gpu",
]


def scripted_env(co_home: Path, server: ScriptedModelServer) -> dict[str, str]:
    """What a server's Co kernels need to talk to a scripted model, in a home of their own."""
    return {
        "CO_HOME": str(co_home),
        "CO_MODEL": "compat:scripted",
        "CO_BASE_URL": server.base_url,
        "CO_SANDBOX": "subprocess",
    }


def write_notebook(path: Path, cells: list[str]) -> None:
    """A notebook of Co prompts that runs on the ``co`` kernel."""
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {},
             "outputs": [], "source": text}
            for i, text in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"display_name": "Co", "language": "co", "name": "co"},
            "language_info": {"name": "co"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    path.write_text(json.dumps(notebook, indent=1))


class _SharedChromium:
    """One Playwright driver and one Chromium for a test module's tests, started on first use.

    Starting them costs about 1.5 s of CPU (the driver is a Node.js process); a browser
    test needs only a page of its own. Each page gets a fresh context (its own cookies,
    storage and cache), so tests share nothing but the browser process, which is launched
    again if it went away. Closed after the module's last test (tests/conftest.py): while
    Playwright's sync API is started, its event loop counts as running in this thread,
    and ``asyncio.run`` in any other test would fail.
    """

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Any = None
        atexit.register(self.close)

    def browser(self) -> Any:
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        if not Path(CHROMIUM).exists():
            raise RuntimeError(
                f"{CHROMIUM} is missing: apt-get install chromium (scripts/test.sh does)"
            )
        if self._playwright is None:
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
        return self._browser

    def close(self) -> None:
        with suppress(Exception):
            if self._browser is not None:
                self._browser.close()
        with suppress(Exception):
            if self._playwright is not None:
                self._playwright.stop()
        self._browser = self._playwright = None


_CHROMIUM = _SharedChromium()


def close_shared_browser() -> None:
    """Stop the module's Chromium and Playwright driver, if they were started."""
    _CHROMIUM.close()


def shared_browser() -> Any:
    """This test process's headless Chromium (Playwright ``Browser``)."""
    return _CHROMIUM.browser()


@contextmanager
def chromium_page(viewport: tuple[int, int] = (1280, 900)) -> Iterator[Any]:
    """A Playwright page of its own (a fresh context) in the process's headless Chromium."""
    width, height = viewport
    context = shared_browser().new_context(viewport={"width": width, "height": height})
    try:
        yield context.new_page()
    finally:
        with suppress(Exception):  # a crashed browser has nothing left to close
            context.close()


def open_notebook(page: Any, url: str, *, idle: bool = True) -> Any:
    """Go to a notebook's URL and wait for its first cell (and, with ``idle``, its kernel)."""
    page.goto(url)
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
    if idle:
        # The kernel must be up before Shift+Enter, or the run request is lost.
        page.get_by_text("Co | Idle").wait_for(timeout=90_000)
    return page.locator(".jp-Notebook .jp-Cell").first


def run_cell(page: Any, index: int) -> Any:
    """Run the notebook's cell ``index`` with Shift+Enter; returns its locator."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    return cell


def save_notebook(page: Any, path: Path, timeout: float = 20) -> None:
    """Ctrl+S, then wait until the file on disk changed and is whole JSON again.

    The server may still be writing when the modification time changes (a test once read
    it empty).
    """
    before = path.stat().st_mtime_ns
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + timeout
    while path.stat().st_mtime_ns == before or not _is_json(path):
        assert time.monotonic() < deadline, f"{path.name} was not saved"
        time.sleep(0.1)


def _is_json(path: Path) -> bool:
    try:
        json.loads(path.read_text())
    except ValueError:
        return False
    return True


@dataclass
class CoLab:
    """A JupyterLab server whose Co kernels talk to a scripted model, and a page on it."""

    lab: JupyterServer
    notebook: Path
    """The one notebook written for the test; its folder is the server's root."""
    page: Any
    server: ScriptedModelServer
    """The scripted model: what it was asked is in ``server.requests``."""

    @property
    def url(self) -> str:
        return self.lab.url(f"lab/tree/{self.notebook.name}")


@contextmanager
def co_lab(
    tmp_path: Path,
    cells: list[str],
    script: list[dict[str, Any]],
    *,
    python: Path | None = None,
    app: Literal["lab", "notebook"] = "lab",
    **env: str,
) -> Iterator[CoLab]:
    """Serve a notebook of ``cells`` with Co answering from ``script``; the model saw no error.

    ``python``: run JupyterLab in that environment's Python (``start_server``); ``app``:
    ``notebook`` serves Notebook 7 instead.
    """
    ensure_kernelspec()
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    home = tmp_path / "co-home"
    home.mkdir()
    notebook = notebooks / "co.ipynb"
    write_notebook(notebook, cells)
    with ScriptedModelServer(script) as server:
        env = {**scripted_env(home, server), **env}
        lab = start_server(notebooks, env=env, app=app, base=tmp_path / "jupyter", python=python)
        try:
            with chromium_page() as page:
                yield CoLab(lab, notebook, page, server)
        finally:
            lab.stop()
        assert server.errors == []


def open_palette_command(page: Any, label: str) -> Any:
    """Open the command palette as a person does and find the command ``label`` in it."""
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:activate-command-palette')")
    palette = page.locator(".lm-CommandPalette-input:visible")
    palette.wait_for()
    palette.fill(label)
    item = page.locator(".lm-CommandPalette-item:visible", has_text=label).first
    item.wait_for()
    return item


SESSION_COLUMNS = ["Session", "Notebook", "First", "Last", "Turns", "Calls", "Refused", "Cost"]
CALL_COLUMNS = [
    "Time", "Session", "Turn", "Tool", "Target", "Decision", "Status", "Duration", "Detail"
]  # fmt: skip

_CLIPPED_JS = """panel => {
  const found = [];
  const edge = panel.getBoundingClientRect();
  for (const wrap of panel.querySelectorAll('.co-Activity-sessionsWrap, .co-Activity-callsWrap')) {
    const table = wrap.querySelector('table');
    if (!table) continue;
    const box = wrap.getBoundingClientRect();
    const where = wrap.className;
    if (box.left < edge.left - 1 || box.right > edge.right + 1) found.push(`${where} goes past the panel`);
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(wrap).overflowX);
    if (wrap.scrollWidth > wrap.clientWidth + 1 && !scrolls) found.push(`${where} is cut, not scrolled`);
    // What the wrapper can show by scrolling sideways.
    const left = box.left - wrap.scrollLeft, right = left + wrap.scrollWidth;
    for (const cell of table.querySelectorAll('th, td')) {
      const r = cell.getBoundingClientRect();
      const name = `${where} ${cell.tagName} ${JSON.stringify(cell.textContent)}`;
      if (getComputedStyle(cell).display === 'none' || r.width === 0) found.push(`${name} is hidden`);
      else if (cell.scrollWidth > cell.clientWidth + 1) found.push(`${name} is cut short`);
      else if (r.left < left - 1 || r.right > right + 1) found.push(`${name} lies outside its table`);
    }
  }
  return found;
}"""


def assert_activity_columns_intact(panel: Any) -> None:
    """Every column of the activity panel's tables is there and whole: each header and
    cell is shown, none has its text cut, and each lies inside its table's wrapper, which
    stays within the panel and scrolls sideways when the table is wider."""
    headers = [
        [t.strip() for t in panel.locator(f"{wrap} th").all_inner_texts()]
        for wrap in (".co-Activity-sessionsWrap", ".co-Activity-callsWrap")
    ]
    assert headers == [SESSION_COLUMNS, CALL_COLUMNS]
    assert panel.evaluate(_CLIPPED_JS) == []
