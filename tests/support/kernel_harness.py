"""Drive real Co kernel processes over ZMQ, the way each frontend does."""

from __future__ import annotations

import os
import queue
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any, Literal

from jupyter_client.manager import KernelManager

from co_kernel.frontend import TERMINAL_METADATA

from .kernel_forkserver import ForkingProvisioner, forking

Mode = Literal["notebook", "console", "headless"]


def ensure_kernelspec() -> None:
    """Register the Co kernelspec in this environment if the setup has not."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("co")
    except NoSuchKernel:
        from co_kernel.cli import install_kernelspec

        install_kernelspec(prefix=sys.prefix)


@dataclass
class CellResult:
    """Everything a cell produced."""

    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    sent_at: float = 0.0
    replied_at: float = 0.0
    interrupt_sent: bool = False
    interrupted_at: float = 0.0
    """When the interrupt was sent (monotonic), if one was."""

    @property
    def status(self) -> str:
        return self.reply["content"]["status"]

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["msg_type"] in types]

    @property
    def stdout(self) -> str:
        return "".join(
            m["content"]["text"] for m in self.of_type("stream") if m["content"]["name"] == "stdout"
        )

    @property
    def stderr(self) -> str:
        """What the cell shows in red: stderr text, then its error output's lines."""
        streamed = "".join(
            m["content"]["text"] for m in self.of_type("stream") if m["content"]["name"] == "stderr"
        )
        return streamed + "".join(line + "\n" for line in self.error_lines)

    @property
    def error_lines(self) -> list[str]:
        """The traceback lines of the cell's ``error`` outputs."""
        return [line for m in self.of_type("error") for line in m["content"]["traceback"]]

    def final_displays(self) -> dict[str, dict[str, Any]]:
        """display_id (or a position key) -> the last data shown under it, in first-seen order."""
        shown: dict[str, dict[str, Any]] = {}
        for i, m in enumerate(self.of_type("display_data", "update_display_data")):
            did = m["content"].get("transient", {}).get("display_id") or f"#{i}"
            shown[did] = m["content"]["data"]
        return shown

    def markdown(self) -> str:
        """All Markdown the cell finally shows, joined (the source of each rendered output)."""
        return "".join(markdown_source(d) or "" for d in self.final_displays().values())

    def text(self) -> str:
        """Everything a person would read: final displays (their text) and streams."""
        parts = []
        for data in self.final_displays().values():
            parts.append(markdown_source(data) or data.get("text/plain") or "")
        return "\n".join(parts) + self.stdout + self.stderr


def markdown_source(data: dict[str, Any]) -> str | None:
    """The Markdown of an output Co rendered to HTML, else None.

    Co never sends ``text/markdown``: it sends the rendered, sanitised HTML in a
    ``co-markdown`` element, with the Markdown as the text/plain. A streamed answer's
    updates before a segment's last carry the HTML only: for them, the HTML's text.
    """
    assert "text/markdown" not in data, f"Co sent raw Markdown: {data}"
    html = str(data.get("text/html", ""))
    if 'class="co-markdown"' not in html:
        return None
    if "text/plain" in data:
        return str(data["text/plain"])
    return html_text(html)


def html_text(html: str) -> str:
    """The text a page shows for Co's rendered HTML (tags dropped, entities decoded)."""
    return unescape(re.sub(r"<[^>]+>", "", html))


class CoKernel:
    """A running Co kernel and a client connected to it."""

    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        *,
        wait_ready: bool = True,
        fork: bool = True,
        log: Path | None = None,
        source: Path | None = None,
    ) -> None:
        """Start the kernel; ``wait_ready=False`` leaves the first request to the test.

        ``source``: the checkout whose ``co_kernel`` the kernel imports (default: this one;
        a benchmark passes a worktree of an older commit, with ``fork=False``).

        ``fork``: the kernel is forked from this test process's fork server, which has
        imported Co already (tests/support/kernel_forkserver.py); tests of start-up itself pass
        False to launch a fresh interpreter, and ``CO_TEST_FORK=0`` makes every kernel so.
        ``log``: a file that gets the kernel's stdout and stderr, as a Jupyter server's log
        does (a fresh interpreter: forked kernels write where the fork server does).
        """
        ensure_kernelspec()
        # IPC sockets: with TCP, the ports jupyter_client picks can be taken by another
        # process before the kernel binds them ("Address already in use") on a busy machine.
        self._ipc_dir = tempfile.mkdtemp(prefix="co-kernel-ipc-")
        self.km = KernelManager(
            kernel_name="co", transport="ipc", ip=os.path.join(self._ipc_dir, "kernel")
        )
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
        full_env.update(env)
        # Kernels import this checkout, whatever the environment has installed.
        repo = str(source or Path(__file__).resolve().parents[2])
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, full_env.get("PYTHONPATH")) if p)
        if fork and forking() and log is None and source is None:
            self.km.kernel_id = str(uuid.uuid4())
            self.km.provisioner = ForkingProvisioner(
                kernel_id=self.km.kernel_id, kernel_spec=self.km.kernel_spec, parent=self.km
            )
        output: dict[str, Any] = {}
        if log is not None:
            self._log = log.open("a")
            output = {"stdout": self._log, "stderr": self._log}
        self.km.start_kernel(env=full_env, cwd=str(cwd), **output)
        self.kc = self.km.client()
        self.kc.start_channels()
        if wait_ready:
            try:
                self.kc.wait_for_ready(timeout=120)
            except BaseException:
                # No half-started kernel or open sockets left behind for later tests.
                self.shutdown()
                raise
        self.cwd = cwd

    def execute(
        self,
        code: str,
        *,
        mode: Mode = "notebook",
        cell_id: str | None = None,
        timeout: float = 60,
        interrupt_after: float | None = None,
        interrupt_when: Callable[[], bool] | None = None,
        on_message: Any = None,
        on_input: Any = None,
    ) -> CellResult:
        """Run one cell and collect its iopub messages until the kernel is idle again.

        ``interrupt_after`` interrupts after a delay; ``interrupt_when`` as soon as the
        condition holds (checked between messages, at least every 50 ms), so the
        interrupt lands in the phase a test is about however slow the machine is.
        ``on_message(kernel, msg)`` sees each iopub message of the cell as it arrives (it
        may send comm messages, e.g. a ``WidgetClicker``). ``input_request`` messages on
        the stdin channel are added to the result; ``on_input(kernel, msg)`` may return
        the text to answer with (None leaves the request unanswered).
        """
        msg = self._execute_request(code, mode, cell_id)
        sent_at = time.monotonic()
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        result = CellResult(reply={}, sent_at=sent_at)
        deadline = sent_at + timeout
        interrupted = False
        idle = False
        while not idle:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"cell did not finish within {timeout}s: {code[:60]!r}")
            if not interrupted and (
                (interrupt_after is not None and time.monotonic() - sent_at >= interrupt_after)
                or (interrupt_when is not None and interrupt_when())
            ):
                self.km.interrupt_kernel()
                interrupted = True
                result.interrupted_at = time.monotonic()
            self._poll_stdin(msg_id, result, on_input)
            try:
                m = self.kc.get_iopub_msg(timeout=min(remaining, 0.02))
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            m["_received"] = time.monotonic()
            if on_message is not None:
                on_message(self, m)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                idle = True
            elif m["msg_type"] != "status":
                result.messages.append(m)
        reply = self.kc.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
        result.reply = reply
        result.replied_at = time.monotonic()
        result.interrupt_sent = interrupted
        return result

    def _execute_request(self, code: str, mode: Mode, cell_id: str | None) -> dict[str, Any]:
        """An execute_request as the frontend of ``mode`` sends it (JupyterLab adds cellId,
        jupyter console with Co's config the terminal flag)."""
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": mode != "headless",
            "stop_on_error": False,
        }
        msg = self.kc.session.msg("execute_request", content)
        if mode == "notebook":
            msg["metadata"]["cellId"] = cell_id or str(uuid.uuid4())
        elif mode == "console":
            msg["metadata"][TERMINAL_METADATA] = True
        return msg

    def send(self, code: str, *, mode: Mode = "notebook", cell_id: str | None = None) -> str:
        """Send a cell without waiting for it; returns the request's msg_id."""
        msg = self._execute_request(code, mode, cell_id)
        self.kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def wait_for(self, msg_id: str, predicate: Any, *, timeout: float = 60) -> list[dict[str, Any]]:
        """Read iopub messages of one request until ``predicate(msg)`` holds; returns them."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no matching message for {msg_id} within {timeout}s")
            try:
                m = self.kc.get_iopub_msg(timeout=min(remaining, 0.05))
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            seen.append(m)
            if predicate(m):
                return seen

    def restart(self) -> None:
        """Restart the kernel process (as the Restart button does) and wait until it answers."""
        self.km.restart_kernel(now=False)
        self.kc.wait_for_ready(timeout=120)

    def kill(self) -> None:
        """SIGKILL the kernel process: no shutdown, no cleanup, as in a crash."""
        import signal

        provisioner = self.km.provisioner
        assert provisioner is not None and provisioner.pid is not None
        os.kill(provisioner.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)

    def _poll_stdin(self, msg_id: str, result: CellResult, on_input: Any) -> None:
        while self.kc.stdin_channel.msg_ready():
            m = self.kc.get_stdin_msg(timeout=0)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            m["_received"] = time.monotonic()
            result.messages.append(m)
            if m["msg_type"] == "input_request" and on_input is not None:
                answer = on_input(self, m)
                if answer is not None:
                    self.kc.input(answer)

    def send_comm_msg(self, comm_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """Send a ``comm_msg`` on the shell channel, as a frontend's widget manager does."""
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)
        return msg

    def click(self, comm_id: str) -> float:
        """Click an ipywidgets Button (protocol 2.1); returns the monotonic send time."""
        self.send_comm_msg(comm_id, {"method": "custom", "content": {"event": "click"}})
        return time.monotonic()

    def is_alive(self) -> bool:
        return self.km.is_alive()

    def shutdown(self) -> None:
        """Stop the kernel the way a frontend does; safe to call twice."""
        if getattr(self, "_shut", False):
            return
        self._shut = True
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)
        shutil.rmtree(self._ipc_dir, ignore_errors=True)
        if getattr(self, "_log", None) is not None:
            self._log.close()


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@dataclass
class WidgetClicker:
    """Plays JupyterLab's part in approvals: clicks a button on each widget card shown.

    Pass as ``on_message``. Buttons are learned from ``comm_open`` messages (target
    ``jupyter.widget``, state ``_model_name: ButtonModel``); when a widget view is
    displayed, the button labelled with the next of ``choices`` among those opened since
    the previous card is clicked. A choice of None leaves that card waiting.
    """

    choices: list[str | None]
    buttons: list[tuple[str, str]] = field(default_factory=list)
    """(comm id, description) of every button opened, in order."""
    cards: int = 0
    """Widget views displayed so far."""
    clicked: list[tuple[str, float]] = field(default_factory=list)
    """(description, send time) of each click."""
    _seen: int = 0

    def __call__(self, kernel: CoKernel, msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "comm_open" and content.get("target_name") == "jupyter.widget":
            state = content.get("data", {}).get("state", {})
            if state.get("_model_name") == "ButtonModel":
                self.buttons.append((content["comm_id"], state.get("description", "")))
        elif msg["msg_type"] == "display_data" and WIDGET_VIEW in content.get("data", {}):
            fresh, self._seen = self.buttons[self._seen :], len(self.buttons)
            choice = self.choices[self.cards] if self.cards < len(self.choices) else None
            self.cards += 1
            if choice is None:
                return
            comm_id = next(cid for cid, label in fresh if label == choice)
            self.clicked.append((choice, kernel.click(comm_id)))
