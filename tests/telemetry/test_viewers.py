"""The viewers as a person runs them: `co-kernel traces`, `co-kernel logs`, `co-kernel tail`."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from ..support.net import free_port
from .span_reader import co_kernel_cli as _cli
from .span_reader import telemetry_db, turns_done, wait_for_spans


def _popen(*args: str, co_home: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env["CO_HOME"] = str(co_home)
    return subprocess.Popen(
        [sys.executable, "-m", "co_kernel.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture
def two_sessions(start_kernel, model_server, co_home: Path) -> list[str]:
    """Two kernels (two sessions): one with two turns (one calls a tool), one with one."""
    model_server.extend(
        [
            {"text": "Hello.", "usage": {"prompt_tokens": 50, "completion_tokens": 2}},
            {"tool_calls": [{"name": "no_such_tool", "arguments": {"path": "notes.md"}}]},
            {"text": "Done.", "usage": {"prompt_tokens": 90, "completion_tokens": 1}},
            {"text": "Other session."},
        ]
    )
    first = start_kernel()
    first.execute("hi")
    first.execute("use a tool")
    second = start_kernel()
    second.execute("another session")
    spans = wait_for_spans(telemetry_db(co_home), turns_done(3))
    sessions = []
    for span in spans:
        if span.kind == "turn" and span.session_id not in sessions:
            sessions.append(span.session_id)
    return sessions


# -- traces ---------------------------------------------------------------------------


class _Tree(HTMLParser):
    """Sections of turns, each with its nested span list, parsed from the page."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[dict[str, Any]] = []
        self.stack: list[dict[str, Any]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._li_depth: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "section":
            self.sections.append({"attrs": a, "roots": [], "calls": [], "bars": []})
        elif tag == "li" and "data-span-id" in a:
            node = {"attrs": a, "children": []}
            if self.stack:
                self.stack[-1]["children"].append(node)
            else:
                self.sections[-1]["roots"].append(node)
            self.stack.append(node)
            self._li_depth.append("span")
        elif tag == "li":
            self._li_depth.append("other")
        elif tag == "tr" and "data-tool" in a:
            self.sections[-1]["calls"].append(a)
        elif tag == "span" and (a.get("class") or "") == "bar":
            self.sections[-1]["bars"].append(a.get("style") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "li" and self._li_depth and self._li_depth.pop() == "span":
            self.stack.pop()


def _kinds(node: dict[str, Any]) -> Any:
    return (node["attrs"]["data-kind"], [_kinds(c) for c in node["children"]])


def test_traces_writes_a_self_contained_page_with_the_span_tree(
    two_sessions: list[str], co_home: Path, tmp_path: Path
):
    out = tmp_path / "traces.html"
    done = _cli("traces", "--output", str(out), co_home=co_home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Wrote 3 turn(s)" in done.stdout
    page = out.read_text()
    tree = _Tree()
    tree.feed(page)
    assert len(tree.sections) == 3
    # Self-contained: no scripts, nothing loaded from elsewhere.
    for tag, attrs in tree.tags:
        assert tag not in ("script", "link", "img", "iframe")
        assert not any(k in ("src", "href") for k in attrs), (tag, attrs)

    first, second, third = tree.sections
    assert [s["attrs"]["data-turn"] for s in tree.sections] == ["1", "2", "1"]
    assert first["attrs"]["data-session-id"] == second["attrs"]["data-session-id"]
    assert third["attrs"]["data-session-id"] != first["attrs"]["data-session-id"]
    # One turn root; inside it the agent run; inside that the model request(s).
    assert [_kinds(r) for r in first["roots"]] == [("turn", [("agent", [("model", [])])])]
    assert [_kinds(r) for r in second["roots"]] == [
        ("turn", [("agent", [("model", []), ("model", [])])])
    ]
    root = second["roots"][0]
    assert root["attrs"]["data-parent-id"] == ""
    agent = root["children"][0]
    assert agent["attrs"]["data-parent-id"] == root["attrs"]["data-span-id"]
    # The tool call and its decision, from the audit event of the turn.
    assert second["calls"] == [
        {"class": "call", "data-tool": "no_such_tool", "data-decision": "auto"}
    ]
    # Waterfall: the turn's bar spans the row; every bar is positioned in percent.
    assert second["bars"][0] == "left:0.00%;width:100.00%"
    assert all(b.startswith("left:") and "width:" in b for b in second["bars"])
    assert "50 → 2" in page and "hi" in page


def test_traces_of_one_session(two_sessions: list[str], co_home: Path, tmp_path: Path):
    out = tmp_path / "one.html"
    done = _cli("traces", "--session", two_sessions[1][:8], "-o", str(out), co_home=co_home)
    assert done.returncode == 0
    tree = _Tree()
    tree.feed(out.read_text())
    assert [s["attrs"]["data-session-id"] for s in tree.sections] == [two_sessions[1]]


def test_traces_without_a_database_says_so(tmp_path: Path):
    done = _cli("traces", "-o", str(tmp_path / "x.html"), co_home=tmp_path / "empty")
    assert done.returncode == 1
    assert "No telemetry yet" in done.stdout
    assert not (tmp_path / "x.html").exists()


# -- logs -----------------------------------------------------------------------------


def _get_json(url: str, deadline: float) -> Any:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return json.loads(resp.read())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_logs_serves_the_database_with_datasette_on_localhost(
    two_sessions: list[str], co_home: Path
):
    port = free_port()
    proc = _popen("logs", "--port", str(port), co_home=co_home)
    try:
        deadline = time.monotonic() + 60
        base = f"http://127.0.0.1:{port}/telemetry"
        turns = _get_json(f"{base}/spans.json?kind=turn&_shape=array", deadline)
        assert len(turns) == 3
        assert {t["session_id"] for t in turns} == set(two_sessions)
        calls = _get_json(f"{base}/tool_calls.json?_shape=array", deadline)
        assert [(c["tool"], c["decision"], c["target"]) for c in calls] == [
            ("no_such_tool", "auto", "notes.md")
        ]
        usage = _get_json(f"{base}/usage_by_session.json?_shape=array", deadline)
        by_session = {u["session_id"]: u for u in usage}
        assert by_session[two_sessions[0]]["turns"] == 2
        assert by_session[two_sessions[0]]["requests"] == 3
    finally:
        _stop(proc)
    assert proc.returncode is not None


def test_logs_without_datasette_says_how_to_install_it(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env["CO_HOME"] = str(tmp_path)
    # An environment where the package cannot be imported, as after a plain install.
    code = "import sys; sys.modules['datasette'] = None; from co_kernel.cli import main; sys.exit(main(['logs']))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 1
    assert "pip install 'co-kernel[logs]'" in done.stdout
    assert "Traceback" not in done.stderr


# -- tail -----------------------------------------------------------------------------


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _until(lines: queue.Queue[str], text: str, seen: list[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not any(text in line for line in seen):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"{text!r} never printed; got {seen}")
        try:
            seen.append(lines.get(timeout=remaining))
        except queue.Empty:
            continue


def test_tail_follow_prints_spans_as_turns_finish(start_kernel, model_server, co_home: Path):
    proc = _popen("tail", "--follow", "--interval", "0.2", co_home=co_home)
    try:
        lines = _lines(proc)
        seen: list[str] = []
        _until(lines, "Waiting for", seen)
        kernel = start_kernel()
        model_server.extend(
            [{"text": "First.", "usage": {"prompt_tokens": 7, "completion_tokens": 1}}]
        )
        kernel.execute("one")
        _until(lines, "turn 1", seen)
        first_batch = len(seen)
        model_server.extend([{"text": "Second."}])
        kernel.execute("two")
        _until(lines, "turn 2", seen)
    finally:
        _stop(proc)
    printed = "".join(seen)
    assert "chat scripted" in printed and "invoke_agent co" in printed
    assert "7→1 tok" in printed
    assert first_batch < len(seen), "the second turn's spans arrived later, as they happened"


def test_tail_once_filters_by_kind_and_session(two_sessions: list[str], co_home: Path):
    models = _cli("tail", "--once", "--kind", "model", co_home=co_home)
    assert models.returncode == 0
    rows = [line for line in models.stdout.splitlines() if line.strip()]
    assert len(rows) == 4 and all("chat scripted" in r for r in rows)
    mine = _cli("tail", "--once", "--session", two_sessions[1][:8], co_home=co_home)
    rows = [line for line in mine.stdout.splitlines() if line.strip()]
    assert rows and all(two_sessions[1][:8] in r for r in rows)
    assert any("turn 1" in r for r in rows)
