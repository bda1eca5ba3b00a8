"""The JupyterLab extension in a real JupyterLab, driven in headless Chromium.

One JupyterLab for the module, started in a throwaway Jupyter environment with this
checkout's prebuilt extension, the Co kernelspec and a scripted model server. These are
the extension's smoke tests (Playwright for Python instead of Galata, which would need
its own browser download). Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import nbformat
import pytest
from genai_prices import Usage, calc_price

from co_kernel.frontend import tool_call_bundle
from co_kernel.replay import ScriptedModelServer
from co_kernel.telemetry import AuditEvent, AuditLog
from co_kernel.turn._frontend import ToolCallView, ToolResultView

from ..support.lab_server import REPO, JupyterServer, start_server
from ..support.notebooks import write_notebook
from .conftest import FAILED
from .jupyterlab import chromium_page, open_palette_command, scripted_env

pytestmark = [pytest.mark.browser, pytest.mark.slow]

playwright_api = pytest.importorskip("playwright.sync_api")

ARTIFACTS = REPO / "test-artifacts"
LOAD = 90_000  # ms: JupyterLab's first load on a small CI machine
DIFF = "--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,3 @@\n # Notes\n-old line\n+new line\n context\n"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([]) as server:
        yield server


@pytest.fixture(scope="module")
def co_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("co-home")


@pytest.fixture(scope="module")
def lab(
    tmp_path_factory: pytest.TempPathFactory, model: ScriptedModelServer, co_home: Path
) -> Iterator[JupyterServer]:
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    root.mkdir()
    env = scripted_env(co_home, model)
    server = start_server(root, env=env, base=base / "jupyter")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(request: pytest.FixtureRequest) -> Iterator[Any]:
    errors: list[str] = []
    with chromium_page(viewport=(1280, 860)) as page:
        page.set_default_timeout(60_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        yield page
        if request.node.stash.get(FAILED, False):
            _shot(page, f"failed-{request.node.name}")
    assert not [e for e in errors if "co" in e.lower()], errors


def _open(page: Any, lab: JupyterServer, name: str) -> None:
    page.goto(lab.url(f"lab/tree/{name}", reset=""))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=LOAD)


def _wait_idle(page: Any, kernel: str) -> None:
    """Until the kernel is connected and idle (the status bar says so)."""
    page.wait_for_selector(f"text={kernel} | Idle", timeout=LOAD)


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"labextension-{name}.png"))


def _run_first_cell(page: Any) -> None:
    page.locator(".jp-Cell .jp-InputArea-editor").first.click()
    page.keyboard.press("Shift+Enter")


def _status_text(page: Any) -> str:
    return page.locator(".co-StatusBar .co-StatusBar-text").inner_text()


# Relative luminance and contrast (WCAG 2), with translucent backgrounds composited
# over their ancestors, as the eye sees them.
_CONTRAST_JS = """
(el) => {
  const parse = c => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => {
    const a = top[3] + bottom[3] * (1 - top[3]);
    if (a === 0) return [0, 0, 0, 0];
    return [0, 1, 2].map(i => (top[i] * top[3] + bottom[i] * bottom[3] * (1 - top[3])) / a).concat([a]);
  };
  let bg = [0, 0, 0, 0];
  for (let node = el; node && bg[3] < 1; node = node.parentElement) {
    bg = over(bg, parse(getComputedStyle(node).backgroundColor));
  }
  bg = over(bg, [255, 255, 255, 1]);
  const fg = over(parse(getComputedStyle(el).color), bg);
  const lum = c => {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}
"""

_CARD_PARTS = (
    ".co-ToolCard-status",
    ".co-ToolCard-tool",
    ".co-ToolCard-argsLine",
    ".co-ToolCard-decision",
    ".co-ToolCard-duration",
    ".co-ToolCard-heading",
    ".co-Diff-add",
    ".co-Diff-del",
    ".co-Diff-hunk",
    ".co-ToolCard-result pre",
    ".co-ToolCard-footer",
)


def _contrasts(page: Any) -> dict[str, float]:
    page.mouse.move(1, 1)  # no hover highlight: the card as it rests
    card = page.locator(".co-ToolCard").first
    return {part: card.locator(part).first.evaluate(_CONTRAST_JS) for part in _CARD_PARTS}


def _set_theme(page: Any, theme: str) -> None:
    page.evaluate(
        "theme => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme
    )
    light = "true" if "Light" in theme else "false"
    page.wait_for_selector(f"body[data-jp-theme-light='{light}']", state="attached")
    page.wait_for_timeout(500)  # let the theme's stylesheet apply before reading colours


def test_saved_tool_call_card_renders_expands_and_reads_well_in_both_themes(
    page: Any, lab: JupyterServer
) -> None:
    call = ToolCallView("call_1", "write_file", {"path": "notes.md", "content": "new"}, True, DIFF)
    result = ToolResultView(
        "call_1", "write_file", "Wrote 3 lines to notes.md", "ok", 0.42, "approved"
    )
    cell = nbformat.v4.new_code_cell("Update my notes")
    cell.outputs = [nbformat.v4.new_output("display_data", data=tool_call_bundle(call, result))]
    name = write_notebook(lab.root / "saved-card.ipynb", [cell])
    _open(page, lab, name)

    card = page.locator(".co-ToolCard")
    card.wait_for()
    assert card.get_attribute("data-status") == "ok"
    summary = card.locator(".co-ToolCard-summary")
    assert summary.locator(".co-ToolCard-tool").inner_text() == "write_file"
    assert summary.locator(".co-ToolCard-status").inner_text() == "done"
    assert summary.locator(".co-ToolCard-decision").inner_text() == "approved"
    assert summary.locator(".co-ToolCard-duration").inner_text() == "0.42 s"
    # The card is preferred over the bundle's text/html fallback, which is not shown.
    assert page.locator("details.co-tool-call").count() == 0
    assert not card.locator(".co-ToolCard-body").is_visible()

    summary.click()
    page.wait_for_selector(".co-ToolCard[open]")
    assert card.locator(".co-ToolCard-body").is_visible()
    assert card.locator(".co-Diff-add").inner_text() == "+new line"
    assert card.locator(".co-Diff-del").inner_text() == "-old line"
    assert card.locator(".co-ToolCard-result pre").inner_text() == "Wrote 3 lines to notes.md"
    assert '"path": "notes.md"' in card.locator(".co-ToolCard-args pre").inner_text()

    try:
        _set_theme(page, "JupyterLab Light")
        _shot(page, "card-light")
        light = _contrasts(page)
        _set_theme(page, "JupyterLab Dark")
        _shot(page, "card-dark")
        dark = _contrasts(page)
    finally:
        _set_theme(page, "JupyterLab Light")
    for theme, contrasts in (("light", light), ("dark", dark)):
        low = {part: round(c, 2) for part, c in contrasts.items() if c < 4.5}
        assert not low, f"{theme} theme: text below 4.5:1 contrast: {low}"


def test_launcher_shows_the_co_kernel_logo(page: Any, lab: JupyterServer) -> None:
    page.goto(lab.url("lab", reset=""))
    card = page.locator(".jp-LauncherCard[title='Co']").first
    card.wait_for(timeout=LOAD)
    logo = card.locator("img")
    assert "kernelspecs/co/logo" in (logo.get_attribute("src") or "")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=logo.element_handle())
    _shot(page, "launcher")


def test_status_bar_shows_the_model_and_follows_each_turn(
    page: Any, lab: JupyterServer, model: ScriptedModelServer
) -> None:
    model.extend(
        [
            {
                "text": "Hello from the scripted model.",
                "usage": {"prompt_tokens": 1500, "completion_tokens": 250},
            }
        ]
    )
    cells = [
        nbformat.v4.new_code_cell("Say hello"),
        nbformat.v4.new_code_cell("%model compat:other"),
    ]
    name = write_notebook(lab.root / "status.ipynb", cells)
    _open(page, lab, name)
    item = page.locator(".co-StatusBar")
    item.wait_for(timeout=LOAD)
    page.wait_for_function(
        "() => document.querySelector('.co-StatusBar-text')?.textContent"
        " === 'Co · compat:scripted · 0 tokens'"
    )
    assert page.locator(".co-StatusBar-yolo").count() == 0

    _run_first_cell(page)
    page.wait_for_selector("text=Hello from the scripted model.")
    page.wait_for_function(
        "() => document.querySelector('.co-StatusBar-text')?.textContent"
        " === 'Co · compat:scripted · 1.8k tokens · price unknown'"
    )
    assert "1,500 in, 250 out over 1 turn(s), price unknown" in (item.get_attribute("title") or "")

    page.keyboard.press("Shift+Enter")  # the %model cell, now active
    page.wait_for_function(
        "() => document.querySelector('.co-StatusBar-text')?.textContent"
        " === 'Co · compat:other · 1.8k tokens · price unknown'"
    )
    _shot(page, "status-bar")
    assert not model.errors, model.errors


def test_status_bar_shows_what_a_priced_models_tokens_cost(
    page: Any, lab: JupyterServer, model: ScriptedModelServer, co_home: Path
) -> None:
    # The person's own settings hold an OpenAI key; the OpenAI route goes to the scripted
    # server (CO_BASE_URL), which answers as gpt-4o, a model genai-prices prices.
    settings = co_home / "config" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"openai_api_key": "sk-test-not-a-real-key"}))
    model.extend(
        [{"text": "Priced hello.", "usage": {"prompt_tokens": 1500, "completion_tokens": 250}}]
    )
    usage = Usage(input_tokens=1500, output_tokens=250)
    cost = calc_price(usage, "gpt-4o", provider_id="openai").total_price
    shown = f"${cost.quantize(Decimal('0.0001'), rounding=ROUND_HALF_UP)}"
    cells = [
        nbformat.v4.new_code_cell("%model openai:gpt-4o"),
        nbformat.v4.new_code_cell("Say hello"),
    ]
    name = write_notebook(lab.root / "priced.ipynb", cells)
    try:
        _open(page, lab, name)
        item = page.locator(".co-StatusBar")
        item.wait_for(timeout=LOAD)
        _run_first_cell(page)
        page.wait_for_function(
            "() => document.querySelector('.co-StatusBar-text')?.textContent"
            " === 'Co · openai:gpt-4o · 0 tokens'"
        )
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector("text=Priced hello.")
        page.wait_for_function(
            "want => document.querySelector('.co-StatusBar-text')?.textContent === want",
            arg=f"Co · openai:gpt-4o · 1.8k tokens · {shown}",
        )
        assert f"1,500 in, 250 out over 1 turn(s), {shown}" in (item.get_attribute("title") or "")
        assert not model.errors, model.errors
    finally:
        settings.unlink()


def test_palette_lists_the_approval_commands_with_their_shortcuts(
    page: Any, lab: JupyterServer
) -> None:
    name = write_notebook(lab.root / "palette.ipynb", [nbformat.v4.new_code_cell("")])
    _open(page, lab, name)
    # Wait until the kernel is up: focus moving to the notebook would close the palette.
    _wait_idle(page, "Co")
    expected = {
        "Co: Approve the pending tool call": "Alt+Y",
        "Co: Deny the pending tool call": "Alt+N",
        "Co: Approve all tool calls this session": "Alt+Shift+Y",
    }
    for label, keys in expected.items():
        item = open_palette_command(page, label)
        shortcut = item.locator(".lm-CommandPalette-itemShortcut").inner_text()
        assert shortcut.replace(" ", "") == keys, (label, shortcut)
        page.keyboard.press("Escape")
    # One prefix for all of Co's commands, the activity panel's too.
    open_palette_command(page, "Co: Open Activity")
    page.keyboard.press("Escape")


def test_activity_panel_lists_audited_calls_with_filters(
    page: Any, lab: JupyterServer, co_home: Path
) -> None:
    log = AuditLog(co_home / "data" / "telemetry.db")
    log.record(
        AuditEvent("panel-session-1", "run_shell_command", "approved", turn=1, target="ls -la")
    )
    log.record(
        AuditEvent(
            "panel-session-1",
            "run_shell_command",
            "denied",
            turn=2,
            target="rm -rf /",
            status="denied",
        )
    )
    log.close()
    page.goto(lab.url("lab", reset=""))
    page.wait_for_selector(".jp-LauncherCard", timeout=LOAD)
    open_palette_command(page, "Co: Open Activity").click()

    panel = page.locator(".co-Activity")
    panel.wait_for()
    rows = panel.locator(".co-Activity-calls tbody tr")
    page.wait_for_function(
        "() => document.querySelectorAll('.co-Activity-calls tbody tr[data-tool=run_shell_command]').length >= 2"
    )
    targets = panel.locator(
        ".co-Activity-calls tbody tr[data-tool=run_shell_command] td:nth-child(5)"
    )
    assert {"ls -la", "rm -rf /"} <= set(targets.all_inner_texts())
    assert panel.locator(".co-Activity-sessions tr[data-session=panel-session-1]").count() == 1
    _shot(page, "activity")

    panel.locator("select[name=decision]").select_option("denied")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.co-Activity-calls tbody tr')]"
        ".every(r => r.dataset.decision === 'denied')"
    )
    assert "rm -rf /" in rows.first.inner_text()


_WIDGET_CELL = """\
import ipywidgets as w
status = w.Label("waiting")
buttons = [w.Button(description=label) for label in ("Approve", "Deny", "Approve all")]
def clicked(button):
    status.value = f"clicked {button.description}"
    for b in buttons:
        b.disabled = True
for b in buttons:
    b.on_click(clicked)
w.VBox([w.HBox(buttons), status])
"""


def test_shortcut_never_presses_a_look_alike_button(page: Any, lab: JupyterServer) -> None:
    """The shortcuts answer Co's calls through the kernel's comm, never by clicking: a card
    with Co's labels in another kernel's output is not Co's question."""
    cells = [nbformat.v4.new_code_cell(_WIDGET_CELL), nbformat.v4.new_code_cell("")]
    name = write_notebook(lab.root / "widget-approval.ipynb", cells, kernel="python3")
    _open(page, lab, name)
    _wait_idle(page, "Python 3 (ipykernel)")
    _run_first_cell(page)
    page.get_by_role("button", name="Approve", exact=True).wait_for()
    # Shift+Enter moved on: the widget is in another cell than the active one.
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+y")
    page.wait_for_selector("text=No Co tool call is waiting for approval here.")
    assert page.locator(".widget-label").inner_text() == "waiting"
    playwright_api.expect(page.get_by_role("button", name="Deny", exact=True)).to_be_enabled()


def test_shortcut_approves_a_real_co_tool_call_end_to_end(
    page: Any, lab: JupyterServer, model: ScriptedModelServer
) -> None:
    # Commands with redirections and `&&`: not read-only, so Co asks before running them.
    model.extend(
        [
            {
                "tool_calls": [
                    {
                        "name": "run_shell_command",
                        "arguments": {"cmd": "echo approved-by-key > key.txt && cat key.txt"},
                    }
                ]
            },
            {"expect": {"tool_result_contains": "approved-by-key"}, "text": "It printed it."},
            {
                "tool_calls": [
                    {"name": "run_shell_command", "arguments": {"cmd": "touch second.txt && ls"}}
                ]
            },
            {"text": "Done again."},
        ]
    )
    cells = [nbformat.v4.new_code_cell("Print something"), nbformat.v4.new_code_cell("Again")]
    name = write_notebook(lab.root / "co-approval.ipynb", cells)
    _open(page, lab, name)
    page.locator(".co-StatusBar").wait_for(timeout=LOAD)

    _run_first_cell(page)
    page.get_by_role("button", name="Approve", exact=True).wait_for()
    waiting = page.locator(".co-ToolCard[data-status='waiting']")
    waiting.wait_for()
    _shot(page, "approval-waiting")
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+y")
    done = page.locator(".co-ToolCard[data-status='ok'][data-decision='approved']")
    done.wait_for()
    page.wait_for_selector("text=It printed it.")
    done.locator(".co-ToolCard-summary").click()
    assert "approved-by-key" in done.locator(".co-ToolCard-result pre").inner_text()

    # "Approve all" by shortcut: the status bar shows YOLO for the rest of the session.
    page.locator(".jp-Cell .jp-InputArea-editor").nth(1).click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_selector(".co-ToolCard[data-status='waiting']")
    page.get_by_role("button", name="Approve all", exact=True).and_(
        page.locator("button:enabled")
    ).wait_for()
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+Shift+y")
    page.wait_for_selector("text=Done again.")
    page.wait_for_selector(".co-ToolCard[data-decision='approved all']")
    page.wait_for_selector(".co-StatusBar-yolo")
    _shot(page, "approval-yolo")

    open_palette_command(page, "Co: Open Activity").click()
    page.wait_for_selector(
        ".co-Activity-calls tbody tr[data-tool=run_shell_command][data-decision=approved]"
    )
    assert not model.errors, model.errors


# The notebook's kernel as JupyterLab's own indicator reads it.
_KERNEL_JS = "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"


def _kernel_subshells(page: Any) -> int:
    """Subshells of the current notebook's kernel (asked over control, awaited to its idle)."""
    return page.evaluate(
        f"async () => (await {_KERNEL_JS}.requestListSubshell({{}}).done).content.subshell_id.length"
    )


def test_a_cell_waiting_for_approval_reads_busy_and_names_the_tool(
    page: Any, lab: JupyterServer, model: ScriptedModelServer
) -> None:
    model.extend(
        [
            {
                "tool_calls": [
                    {"name": "run_shell_command", "arguments": {"cmd": "echo w > waited.txt"}}
                ]
            },
            {"text": "Written after the wait."},
        ]
    )
    name = write_notebook(lab.root / "waiting.ipynb", [nbformat.v4.new_code_cell("Write it")])
    _open(page, lab, name)
    _wait_idle(page, "Co")
    _run_first_cell(page)
    approve = page.get_by_role("button", name="Approve", exact=True)
    approve.wait_for()
    waiting = page.locator(".co-StatusBar .co-StatusBar-waiting")
    waiting.wait_for()
    assert waiting.inner_text() == "waiting for approval: run_shell_command"

    # JupyterLab opened a subshell for the card's widget comms: a control request that
    # ends with an idle of its own. Asking for the list is one more; after it (and its
    # idle), the kernel must say busy again while the cell waits.
    deadline = time.monotonic() + 30
    while _kernel_subshells(page) < 1:
        assert time.monotonic() < deadline, "JupyterLab opened no subshell for the widgets"
        page.wait_for_timeout(100)
    page.wait_for_function(f"() => {_KERNEL_JS}.status === 'busy'")
    page.get_by_text("Co | Busy").wait_for()
    _shot(page, "waiting-busy")

    approve.click()
    page.wait_for_selector("text=Written after the wait.")
    page.get_by_text("Co | Idle").wait_for()
    playwright_api.expect(waiting).to_have_count(0)
    assert (lab.root / "waited.txt").exists()
    assert not model.errors, model.errors
