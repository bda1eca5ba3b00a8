"""No script from what Co shows, and no decision without a person.

A prompt-injected model writes HTML into its answer; a hostile MCP server, a memory and a
provider's error carry it too. In JupyterLab and Notebook 7 (real servers started as a
person starts them, without ``window.jupyterapp``), in headless Chromium, none of it may
run: live, after saving and reloading, nor in the notebook's nbconvert HTML export. Each
payload that ran would call a beacon, an HTTP server on 127.0.0.1 that records what
reached it; and each page ends with a control, a script of the test's own that does reach
the beacon, so a silent beacon means nothing ran and not that nothing could be heard.
"""

from __future__ import annotations

import json
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

from co_kernel.memory import MemoryStore
from co_kernel.replay import ScriptedModelServer

from ..support.kernel_forkserver import python_command
from ..support.kernel_harness import ensure_kernelspec
from ..support.lab_cells import wait_for_prompt
from ..support.lab_server import REPO, JupyterServer, start_server
from .jupyterlab import chromium_page, open_notebook, run_cell, save_notebook, scripted_env

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = REPO / "test-artifacts"
HOSTILE_MCP = Path(__file__).with_name("hostile_mcp_server.py")


class Beacon:
    """An HTTP server that records every path asked of it: what a payload that ran sends."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path.rsplit("/", 1)[-1])
                self.send_response(204)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/pwned"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def js(self, tag: str) -> str:
        """A statement that tells the beacon ``tag`` ran (single quotes only)."""
        return f"fetch('{self.url}/{tag}')"

    def control(self, page: Any, tag: str) -> None:
        """Run the test's own script in ``page`` and wait until the beacon hears it."""
        page.evaluate(
            "html => document.body.insertAdjacentHTML('beforeend', html)",
            f'<img src="x-control" onerror="{self.js(tag)}">',
        )
        deadline = time.monotonic() + 20
        while tag not in self.hits:
            assert time.monotonic() < deadline, "the page's own script never reached the beacon"
            time.sleep(0.1)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def beacon() -> Iterator[Beacon]:
    b = Beacon()
    try:
        yield b
    finally:
        b.close()


def payload(b: Beacon) -> str:
    """An answer with good Markdown and every payload of the issue (streamed, each is cut).

    The ``<style>`` of the last line swallows what follows it (HTML parses style as raw
    text), so it comes last.
    """
    clicker = (
        "setInterval(() => document.querySelectorAll('button').forEach("
        "x => x.textContent.trim() === 'Approve' && x.click()), 100)"
    )
    return f"""## Sales report

| month | revenue |
|:------|--------:|
| May | 1,200<br>(est.) |

```python
print("revenue")
```

See [the source](https://example.org/sales) and ![a chart](https://example.org/chart.png).

<img src=x onerror="{b.js("img-onerror")}">
<img src=x onerror="{clicker}">
<script>{b.js("script")}</script>
<iframe srcdoc="<script>{b.js("iframe-srcdoc")}</script>"></iframe>
<details open ontoggle="{b.js("details-ontoggle")}"><summary>More</summary>Details.</details>
<svg onload="{b.js("svg-onload")}"><circle r="4"/></svg>
<object data="javascript:{b.js("object")}"></object>
<embed src="javascript:{b.js("embed")}">
<a href="javascript:{b.js("a-href")}">click-html-link</a>

[click-md-link](javascript:{b.js("md-link")})

<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==" alt="data-image">
<style>.jp-OutputArea-output, .output_area {{ display: none !important; }}</style>
<span style="display:none">VISIBLE-DESPITE-STYLE</span>

Last words <img src=x onerror="{b.js("cut-mid-tag")}"

<math><mtext><table><mglyph><style><img src=x onerror="{b.js("math")}">"""


def check_rendered(page: Any) -> None:
    """Markdown renders (heading, table, code, link, image placeholder), and nothing hides
    or runs."""
    # The first cell's outputs: a streamed answer may span several (one per finished block).
    out = page.locator(".jp-OutputArea").first
    assert out.locator("h2", has_text="Sales report").count() == 1
    assert out.locator("table td", has_text="1,200").count() == 1
    assert out.locator("pre", has_text='print("revenue")').count() == 1
    assert out.locator('a[href="https://example.org/sales"]').count() == 1
    # A remote image waits for a click (test_remote_images_browser.py).
    assert (
        out.locator('.co-remote-image[data-co-image="https://example.org/chart.png"]').count() == 1
    )
    assert page.get_by_text("VISIBLE-DESPITE-STYLE").is_visible()
    outputs = page.locator(".jp-OutputArea-output")
    for kind in ("script", "iframe", "object", "embed", "svg", "style", "math", "form"):
        assert outputs.locator(kind).count() == 0, f"a <{kind}> reached the page"
    assert outputs.locator('img[src^="data:"]').count() == 0
    assert outputs.locator('[href^="javascript:"]').count() == 0
    # The links the payload offers: clicking them runs nothing.
    for text in ("click-html-link", "click-md-link"):
        for link in page.get_by_text(text).all():
            link.click()


def settle(seconds: float = 2.0) -> None:
    """Give a payload (an interval, an image error) the time it would need to fire."""
    time.sleep(seconds)


def test_answers_notices_and_magics_run_no_script_in_jupyterlab(tmp_path: Path) -> None:
    ensure_kernelspec()
    ARTIFACTS.mkdir(exist_ok=True)
    with beacon() as b:
        root = tmp_path / "notebooks"
        root.mkdir()
        home = tmp_path / "co-home"
        MemoryStore(home / "data" / "memory.db", redact=lambda s: s).add(
            f'Remember <img src=x onerror="{b.js("memory")}"> this'
        )
        notebook = root / "co.ipynb"
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "co", "display_name": "Co", "language": "co"}
        prompts = ["Summarise the sales report", "%mcp", "%forget 1", "And the forecast?"]
        nb.cells = [nbformat.v4.new_code_cell(p) for p in prompts]
        nbformat.write(nb, notebook)
        error = f'Bad request <img src=x onerror="{b.js("provider-error")}">'
        script = [
            {
                "text": payload(b),
                "tokens_per_second": 400,
                "tool_calls": [
                    {"name": "run_shell_command", "arguments": {"cmd": "touch approved"}}
                ],
            },
            {"text": "Approved and done."},
            {
                "fault": {
                    "status": 400,
                    "body": {"error": {"message": error, "type": "invalid_request"}},
                },
                "repeat": 5,  # every attempt of the turn gets it, however often Co retries
            },
        ]
        servers = {"hostile": _mcp_entry(b)}
        with ScriptedModelServer(script) as model:
            env = {**scripted_env(home, model), "CO_MCP_SERVERS": json.dumps(servers)}
            lab = start_server(root, env=env, base=tmp_path / "jupyter", expose_app=False)
            try:
                with chromium_page() as page:
                    page.set_default_timeout(60_000)
                    _in_jupyterlab(page, lab, notebook, b, tmp_path)
            finally:
                lab.stop()


def _mcp_entry(b: Beacon) -> dict[str, Any]:
    command, *args = python_command(str(HOSTILE_MCP), b.url)
    return {"command": command, "args": args}


def _in_jupyterlab(page: Any, lab: JupyterServer, notebook: Path, b: Beacon, tmp: Path) -> None:
    open_notebook(page, lab.url(f"lab/tree/{notebook.name}", reset=""))
    assert page.evaluate("() => typeof window.jupyterapp") == "undefined"

    # 1. The answer streams (cut mid-tag at every update), then a call waits for approval.
    first = run_cell(page, 0)
    approve = first.get_by_role("button", name="Approve", exact=True)
    approve.wait_for(timeout=90_000)
    settle()  # the payload's clicker would have clicked by now
    marker = notebook.parent / "approved"
    assert not marker.exists(), "a script in the answer approved the call"

    # 2. A script that did run could not decide either: click(), a synthetic event, and
    # the approval shortcut pressed by script all decide nothing.
    page.evaluate(
        """() => {
            const approve = [...document.querySelectorAll('.co-approval-card button')]
                .find(b => b.textContent.trim() === 'Approve');
            approve.click();
            approve.dispatchEvent(new MouseEvent('click', {bubbles: true}));
            const notebook = document.querySelector('.jp-Notebook');
            for (const shift of [false, true]) {
                notebook.dispatchEvent(new KeyboardEvent('keydown', {
                    key: shift ? 'Y' : 'y', code: 'KeyY', keyCode: 89, altKey: true,
                    shiftKey: shift, bubbles: true, cancelable: true}));
            }
        }"""
    )
    settle(3)
    assert not marker.exists(), "a scripted click or key press approved the call"
    assert approve.is_enabled(), "the card was decided without a person"
    page.screenshot(path=str(ARTIFACTS / "no-script-waiting.png"))

    # 3. A person's click decides.
    approve.click()
    first.get_by_text("Approved and done.").wait_for(timeout=60_000)
    wait_for_prompt(first, "[1]:")
    assert marker.exists()

    # 4. A hostile MCP description (%mcp), a memory (%forget) and a provider's error.
    for index, text in ((1, "Looks things up."), (2, "Forgot memory 1"), (3, "Bad request")):
        cell = run_cell(page, index)
        wait_for_prompt(cell, f"[{index + 1}]:", timeout=120)
        # text_content: a cell scrolled out of view is not rendered (content-visibility).
        assert text in (cell.locator(".jp-OutputArea").text_content() or ""), index
    settle()
    check_rendered(page)
    page.screenshot(path=str(ARTIFACTS / "no-script-live.png"), full_page=True)
    assert b.hits == [], f"scripts ran live: {b.hits}"

    # 5. Saved and reopened on the same server, which keeps the notebook's trust.
    save_notebook(page, notebook)
    open_notebook(page, lab.url(f"lab/tree/{notebook.name}"))
    page.locator("h2", has_text="Sales report").wait_for()
    settle()
    check_rendered(page)
    assert b.hits == [], f"scripts ran after a reload: {b.hits}"
    b.control(page, "control-lab")

    # 6. Exported to HTML by nbconvert and opened.
    saved = json.loads(notebook.read_text())
    outputs = [o for c in saved["cells"] for o in c.get("outputs", [])]
    assert outputs and not [o for o in outputs if "text/markdown" in o.get("data", {})]
    html = _nbconvert(notebook, tmp / "export")
    assert "<table>" in html and "Sales report" in html
    page.goto(html_path(tmp / "export").as_uri())
    page.get_by_text("Approved and done.").wait_for()
    settle()
    assert b.hits == ["control-lab"], f"scripts ran in the export: {b.hits}"
    b.control(page, "control-export")


def html_path(folder: Path) -> Path:
    [found] = folder.glob("*.html")
    return found


def _nbconvert(notebook: Path, out: Path) -> str:
    """``jupyter nbconvert --to html`` as a person runs it; the HTML it wrote."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nbconvert",
            "--to",
            "html",
            str(notebook),
            "--output-dir",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return html_path(out).read_text()


def test_answers_run_no_script_in_notebook7(tmp_path: Path) -> None:
    ensure_kernelspec()
    with beacon() as b:
        root = tmp_path / "notebooks"
        root.mkdir()
        home = tmp_path / "co-home"
        home.mkdir()
        notebook = root / "n7.ipynb"
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "co", "display_name": "Co", "language": "co"}
        nb.cells = [nbformat.v4.new_code_cell("Summarise the sales report")]
        nbformat.write(nb, notebook)
        with ScriptedModelServer([{"text": payload(b), "tokens_per_second": 400}]) as model:
            env = scripted_env(home, model)
            server = start_server(
                root, env=env, app="notebook", base=tmp_path / "jupyter", expose_app=False
            )
            try:
                with chromium_page() as page:
                    page.set_default_timeout(90_000)
                    _in_notebook7(page, server, notebook, b)
            finally:
                server.stop()


def _in_notebook7(page: Any, server: JupyterServer, notebook: Path, b: Beacon) -> None:
    def load() -> None:
        page.goto(server.url(f"notebooks/{notebook.name}"))
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
        # The kernel answered kernel_info: the extension's item shows its model.
        page.wait_for_function(
            "() => document.querySelector('.co-ToolbarStatus .co-StatusBar-text')"
            "?.textContent?.startsWith('Co · compat:scripted')"
        )

    load()
    page.locator(".jp-Cell .jp-InputArea-editor").first.click()
    page.keyboard.press("Shift+Enter")
    page.get_by_text("Last words").wait_for()
    settle()
    check_rendered(page)
    assert b.hits == [], f"scripts ran live in Notebook 7: {b.hits}"
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 20
    while "Sales report" not in notebook.read_text():
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.2)
    load()
    page.locator("h2", has_text="Sales report").wait_for()
    settle()
    check_rendered(page)
    assert b.hits == [], f"scripts ran after a reload in Notebook 7: {b.hits}"
    b.control(page, "control-notebook7")


def test_markdown_an_older_co_saved_runs_no_script(tmp_path: Path) -> None:
    """A trusted notebook that an older Co saved with a hostile answer as ``text/markdown``.

    The same output without Co's tag (another kernel's) runs its script, as JupyterLab does
    for any trusted output: the control that the notebook really is trusted.
    """
    ensure_kernelspec()
    with beacon() as b:
        root = tmp_path / "notebooks"
        root.mkdir()
        notebook = root / "old.ipynb"
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "co", "display_name": "Co", "language": "co"}

        def cell(tag: str, metadata: dict[str, Any]) -> Any:
            output = nbformat.v4.new_output(
                "display_data",
                data={"text/markdown": f'**{tag}** <img src=x onerror="{b.js(tag)}">'},
                metadata=metadata,
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
                while "other-kernel" not in b.hits:
                    assert time.monotonic() < deadline, f"the control did not run: {b.hits}"
                    time.sleep(0.1)
                settle()
                assert "old-co" not in b.hits, "Markdown an older Co saved ran its script"
                assert page.locator("strong", has_text="old-co").count() == 1
        finally:
            server.stop()
