"""The ``co.notebook`` comm: the live notebook document, through the page that shows it.

The kernel knows the cells it executed; the person sees more (Markdown, cells never run,
unsaved edits). Co's JupyterLab extension opens a comm with target ``co.notebook`` for
every notebook panel whose kernel is a Co kernel (JupyterLab and Notebook 7), and answers
requests from the panel's notebook model:

- kernel -> page: ``{"request": id, "op": "read"}``: the cells as the page holds them now;
  ``{"request": id, "op": "edit", "changes": [change, ...]}``: apply the changes as ONE
  undoable step, after checking that every cell a change names still holds the source the
  change expects (``expect``); a change is ``{"op": "insert", "index", "cells": [{cell_type,
  source}]}``, ``{"op": "set", "id", "expect", "source", "cell_type"?}``, ``{"op": "delete",
  "id", "expect"}``, ``{"op": "move", "id", "expect", "to"}`` or ``{"op": "outputs", "id",
  "outputs", "execution_count"}``.
- page -> kernel: ``{"reply": id, "cells": [...], "path": str, "dirty": bool}`` for a read
  (each cell ``{id, cell_type, source, execution_count, outputs, metadata}`` with every
  output value clipped by the page), ``{"reply": id, "ok": true, "ids": [...]}`` for an
  applied edit (the ids of inserted cells), ``{"reply": id, "error": message}`` otherwise.

Comm messages are dispatched while a cell runs (ipykernel handles ``comm_msg`` beside
the running cell), possibly on another thread, so a reply reaches the waiting tool
through ``call_soon_threadsafe``.

Requests go to one page: the one where the person last decided an approval (``prefer``),
else the one that connected last. When two tabs show the notebook they hold the same
document after a save or with real-time collaboration (``jupyter-collaboration``), where
every page's model is the shared document: an edit one page applies, every page shows.
Each page undoes only its own changes (the shared model's undo manager tracks its own
origin), so an approved edit goes to the page that approved it: there Ctrl+Z reverts it.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

from ..exceptions import PageError

__all__ = ["NOTEBOOK_TARGET", "NotebookPage", "PageError"]

NOTEBOOK_TARGET = "co.notebook"


class NotebookPage:
    """The pages (comms) that show this kernel's notebook, and requests to them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._comms: dict[str, Any] = {}
        """comm id -> comm, the page to ask last."""
        self._clients: dict[str, str] = {}
        """comm id -> the client session (one page's kernel connection) that opened it."""
        self._waiting: dict[str, tuple[str, asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}

    def register(self, comm_manager: Any) -> None:
        """Answer the extension's ``co.notebook`` comms (the kernel's comm manager)."""
        comm_manager.register_target(NOTEBOOK_TARGET, self._open)

    def connected(self) -> bool:
        """Whether a page with Co's extension shows the notebook now."""
        with self._lock:
            return bool(self._comms)

    def prefer(self, client: str) -> None:
        """Ask the page of client session ``client`` from now on (it is the person's)."""
        with self._lock:
            for comm_id in [c for c, who in self._clients.items() if who == client]:
                self._comms[comm_id] = self._comms.pop(comm_id)

    async def request(self, op: str, timeout: float = 15, **args: Any) -> dict[str, Any]:
        """Ask the page (see the module's docstring); its reply, or PageError with a reason."""
        with self._lock:
            comm = next(reversed(self._comms.values()), None)
        if comm is None:
            raise PageError("no page with Co's JupyterLab extension shows this notebook")
        request_id = uuid.uuid4().hex
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            self._waiting[request_id] = (comm.comm_id, loop, future)
        try:
            comm.send({"request": request_id, "op": op, **args})
            reply = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise PageError(f"the page did not answer within {timeout:g} s") from None
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)
        if not isinstance(reply, dict):
            raise PageError("the page sent an unreadable answer")
        if "error" in reply:
            raise PageError(str(reply["error"]))
        return reply

    def _open(self, comm: Any, msg: Any) -> None:
        comm.on_msg(self._message)
        comm.on_close(lambda _m: self._forget(comm.comm_id))
        client = msg.get("header", {}).get("session")
        with self._lock:
            self._comms[comm.comm_id] = comm
            if isinstance(client, str) and client:
                self._clients[comm.comm_id] = client

    def _forget(self, comm_id: str) -> None:
        with self._lock:
            self._comms.pop(comm_id, None)
            self._clients.pop(comm_id, None)
            lost = [w for w in self._waiting.values() if w[0] == comm_id]
        for _, loop, future in lost:
            loop.call_soon_threadsafe(_settle, future, {"error": "the page closed"})

    def _message(self, msg: Any) -> None:
        data = msg.get("content", {}).get("data")
        if not isinstance(data, dict) or not isinstance(data.get("reply"), str):
            return
        with self._lock:
            waiting = self._waiting.get(data["reply"])
        if waiting is not None:
            _, loop, future = waiting
            loop.call_soon_threadsafe(_settle, future, data)


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)
