"""A Co kernel driven through a Jupyter server's REST API and kernel websocket, as JupyterLab does.

The kernel is started by creating a notebook session (``POST api/sessions``); messages go
over ``api/kernels/<id>/channels`` in the server's JSON protocol (each message names its
channel). Results are ``CellResult``s, and ``click`` makes ``WidgetClicker`` work here as
over ZMQ (tests/support/kernel_harness.py).
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from typing import Any

import requests
import websocket
from jupyter_client.session import Session

from ..support.kernel_harness import CellResult


def _decode(frame: str | bytes) -> dict[str, Any]:
    """A message in the server's JSON protocol; binary frames (messages with buffers) start
    with their offsets, the first part being the JSON."""
    if isinstance(frame, str):
        return json.loads(frame)  # type: ignore[no-any-return]
    count = int.from_bytes(frame[:4], "big")
    offsets = [int.from_bytes(frame[4 * (i + 1) : 4 * (i + 2)], "big") for i in range(count)]
    end = offsets[1] if count > 1 else len(frame)
    return json.loads(frame[offsets[0] : end])  # type: ignore[no-any-return]


class ServerKernel:
    """A notebook's kernel on a Jupyter server, reached over HTTP and a websocket."""

    def __init__(self, server_url: str, headers: dict[str, str], path: str) -> None:
        self.server_url = server_url
        self.headers = headers
        created = requests.post(
            server_url + "api/sessions",
            json={"path": path, "name": path, "type": "notebook", "kernel": {"name": "co"}},
            headers=headers,
            timeout=60,
        )
        assert created.status_code == 201, created.text
        self.session_id: str = created.json()["id"]
        self.kernel_id: str = created.json()["kernel"]["id"]
        self._session = Session(username="hub-test")
        ws_url = server_url.replace("http://", "ws://", 1)
        self._ws = websocket.create_connection(
            f"{ws_url}api/kernels/{self.kernel_id}/channels?session_id={uuid.uuid4().hex}",
            header=[f"{k}: {v}" for k, v in headers.items()],
            timeout=120,
        )
        self._queues: dict[str, queue.Queue[dict[str, Any]]] = {
            name: queue.Queue() for name in ("shell", "iopub", "stdin", "control")
        }
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._wait_ready()

    def _read(self) -> None:
        while True:
            try:
                frame = self._ws.recv()
            except (websocket.WebSocketException, OSError):
                return
            if not frame:
                return
            message = _decode(frame)
            self._queues[message.get("channel", "iopub")].put(message)

    def _send(
        self,
        msg_type: str,
        content: dict[str, Any],
        channel: str = "shell",
        metadata: dict[str, Any] | None = None,
    ) -> str:
        msg = self._session.msg(msg_type, content, metadata=metadata)
        msg["channel"] = channel
        self._ws.send(json.dumps(msg, default=str))
        return str(msg["header"]["msg_id"])

    def _reply(self, msg_id: str, channel: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {channel} reply to {msg_id} in {timeout} s")
            try:
                m = self._queues[channel].get(timeout=remaining)
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") == msg_id:
                return m

    def _wait_ready(self, timeout: float = 120) -> None:
        """kernel_info until the kernel answers (the first may go out before it listens)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._reply(self._send("kernel_info_request", {}), "shell", 5)
                return
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise

    def execute(self, code: str, *, on_message: Any = None, timeout: float = 120) -> CellResult:
        """Run a cell as JupyterLab sends it; collect its iopub messages until idle."""
        msg_id = self._send(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": True,
                "stop_on_error": False,
            },
            # JupyterLab names the cell: Co then shows approvals as cards, not prompts.
            metadata={"cellId": str(uuid.uuid4())},
        )
        result = CellResult(reply={}, sent_at=time.monotonic())
        deadline = result.sent_at + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                seen = [m["msg_type"] for m in result.messages]
                raise TimeoutError(
                    f"cell did not finish within {timeout}s: {code[:60]!r}; it sent {seen} "
                    f"and shows:\n{result.text()}"
                )
            try:
                m = self._queues["iopub"].get(timeout=remaining)
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if on_message is not None:
                on_message(self, m)
            if m["msg_type"] == "status":
                if m["content"]["execution_state"] == "idle":
                    break
                continue
            result.messages.append(m)
        result.reply = self._reply(msg_id, "shell", max(1.0, deadline - time.monotonic()))
        result.replied_at = time.monotonic()
        return result

    def send_comm_msg(self, comm_id: str, data: dict[str, Any]) -> None:
        self._send("comm_msg", {"comm_id": comm_id, "data": data})

    def click(self, comm_id: str) -> float:
        """Click an ipywidgets Button (protocol 2.1), as ``CoKernel.click`` does."""
        self.send_comm_msg(comm_id, {"method": "custom", "content": {"event": "click"}})
        return time.monotonic()

    def close(self) -> None:
        """Close the websocket and delete the session (which shuts the kernel down)."""
        self._ws.close()
        requests.delete(
            f"{self.server_url}api/sessions/{self.session_id}", headers=self.headers, timeout=60
        )
