"""Headless Chromium driving JupyterLab (Playwright), and notebooks for it to open.

The server itself comes from ``tests/lab_server.py``.

Chromium is Debian's (``/usr/bin/chromium``); Playwright never downloads a browser.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from co_kernel.testing import ScriptedModelServer

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


@contextmanager
def chromium_page() -> Iterator[Any]:
    """A Playwright page in Debian's headless Chromium."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise RuntimeError(
            f"{CHROMIUM} is missing: apt-get install chromium (scripts/test.sh does)"
        )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            yield page
        finally:
            browser.close()
