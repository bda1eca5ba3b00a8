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

The page opens the comm with ``{"path": ...}``: the notebook it shows, relative to the
server's root. Which page answers: one kernel can serve several notebooks (JupyterLab lets
a second notebook use the kernel of another; a console on it opens no comm), and only the
kernel's own notebook may be read and edited as "this notebook". The server names
that notebook when it starts the kernel (``JPY_SESSION_NAME``: its absolute path, or the
session's path), and a page answers only if its path is that notebook's, matched from the
file name up (the page knows the path below the root, the kernel the full one); of several,
the one matching more of the path, then the one that connected last (two tabs of one
notebook hold the same document after a save or with collaboration). So a notebook in the
root with the same file name as the kernel's (in a folder) is taken for it only while the
kernel's own is not open: the kernel is not told the server's root. A kernel that was not
told its notebook (started outside a Jupyter server) uses the page that connected last,
unless pages of different notebooks are connected: then none, as it cannot tell which is
its own.

Comm messages are dispatched while a cell runs (ipykernel handles ``comm_msg`` beside
the running cell), possibly on another thread, so a reply reaches the waiting tool
through ``call_soon_threadsafe``.

Among the pages of the kernel's own notebook, requests go to the one where the person last
decided an approval (``prefer``), else the one that connected last. Two tabs of one notebook
hold the same document after a save or with real-time collaboration
(``jupyter-collaboration``), where every page's model is the shared document: an edit one
page applies, every page shows.
Each page undoes only its own changes (the shared model's undo manager tracks its own
origin), so an approved edit goes to the page that approved it: there Ctrl+Z reverts it.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import PurePosixPath
from typing import Any

from ..exceptions import PageError

__all__ = ["NOTEBOOK_TARGET", "NotebookPage", "PageError"]

NOTEBOOK_TARGET = "co.notebook"


def _parts(path: str) -> tuple[str, ...]:
    """A path's names, whatever its separators, without the root or ``.``."""
    return tuple(p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("/", "."))


class NotebookPage:
    """The pages (comms) that show this kernel's notebook, and requests to them."""

    def __init__(self, notebook_path: str | None = None) -> None:
        self._own = _parts(notebook_path) if notebook_path else None
        """The kernel's own notebook, as the server named it; None when it was not told."""
        self._lock = threading.Lock()
        self._comms: dict[str, tuple[Any, str | None]] = {}
        """Each open comm and the path of the notebook its page shows (None: not said)."""
        self._clients: dict[str, str] = {}
        """comm id -> the client session (one page's kernel connection) that opened it."""
        self._waiting: dict[str, tuple[str, asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}

    def register(self, comm_manager: Any) -> None:
        """Answer the extension's ``co.notebook`` comms (the kernel's comm manager)."""
        comm_manager.register_target(NOTEBOOK_TARGET, self._open)

    def connected(self) -> bool:
        """Whether a page with Co's extension shows the kernel's own notebook now."""
        return self._chosen()[0] is not None

    def absent(self) -> str | None:
        """Why no page answers for the kernel's notebook now; None when one does."""
        comm, why = self._chosen()
        return None if comm is not None else why

    def _chosen(self) -> tuple[Any | None, str]:
        """The comm of the page that answers (see the module's docstring), or None and why."""
        with self._lock:
            comms = list(self._comms.values())
        if not comms:
            return None, "no page with Co's JupyterLab extension shows this notebook"
        own = self._own
        if own is None:
            if len({path for _, path in comms if path is not None}) > 1:
                return None, (
                    "pages of several notebooks use this kernel, and the kernel was not told "
                    "which notebook is its own"
                )
            return comms[-1][0], ""
        best, score = None, 0
        for comm, path in comms:
            parts = _parts(path) if path else ()
            if parts and own[-len(parts) :] == parts and len(parts) >= score:
                best, score = comm, len(parts)
        if best is None:
            return None, f"no page with Co's JupyterLab extension shows {own[-1]}, its notebook"
        return best, ""

    def prefer(self, client: str) -> None:
        """Ask the page of client session ``client`` from now on (it is the person's)."""
        with self._lock:
            for comm_id in [c for c, who in self._clients.items() if who == client]:
                self._comms[comm_id] = self._comms.pop(comm_id)

    async def request(self, op: str, timeout: float = 15, **args: Any) -> dict[str, Any]:
        """Ask the page of the kernel's notebook; its reply, or PageError with a reason."""
        comm, why = self._chosen()
        if comm is None:
            raise PageError(why)
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
        data = msg.get("content", {}).get("data") if isinstance(msg, dict) else None
        path = data.get("path") if isinstance(data, dict) else None
        comm.on_msg(self._message)
        comm.on_close(lambda _m: self._forget(comm.comm_id))
        client = msg.get("header", {}).get("session")
        with self._lock:
            self._comms[comm.comm_id] = (comm, path if isinstance(path, str) and path else None)
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
