"""The Co Jupyter kernel: protocol glue only; cells go to ``dispatch``."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import re
import signal
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipykernel.ipkernel import IPythonKernel
from ipykernel.zmqshell import ZMQDisplayPublisher, ZMQInteractiveShell
from IPython.core.history import HistoryManager
from traitlets import Type

from .. import __version__
from ..config import paths, tighten_private_files
from ..frontend import TERMINAL_METADATA, terminal_safe
from ..status import LAB_STATUS_KEY, lab_status
from ..store import CellHistory, history_path
from ._dispatch import INTERRUPTED, CellDispatcher, CellRequest, Outcome

if TYPE_CHECKING:
    from ..turn import ChatSession

__all__ = ["CoKernel"]

log = logging.getLogger(__name__)

_WARM_MODULES = (
    "pydantic_ai",
    "pydantic_ai.models.openai",
    "pydantic_ai.providers.openai",
    # The tracing stack (OpenTelemetry SDK), used from the first turn on.
    "co_kernel.telemetry._tracing",
    # What the first turn imported on its way to the first text (measured in a kernel).
    "anyio._backends._asyncio",
    "co_kernel.turn._definitions",
    "co_kernel.models._finish",
)

_WARM_REQUEST: dict[str, Any] = {
    "model": "warm",
    "stream": True,
    "stream_options": {"include_usage": True},
    "tool_choice": "auto",
    "messages": [
        {"role": "system", "content": "."},
        {"role": "user", "content": [
            {"type": "text", "text": "."},
            {"type": "image_url", "image_url": {"url": "data:,"}},
        ]},
        {"role": "assistant", "content": ".", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "c", "content": "."},
    ],
    "tools": [{"type": "function", "function": {
        "name": "f", "description": ".", "parameters": {"type": "object", "properties": {}},
    }}],
}  # fmt: skip
"""A chat request with every part the first turns send, converted once in the warm-up."""

_CELL_END_TIMEOUT = 3.0
"""Seconds a shutdown waits for the interrupted cell's reply (jupyter_client waits 5 s for
the whole shutdown before it kills the kernel)."""

_CLOSE_TIMEOUT = 10.0
"""Seconds a shutdown gives the session to stop its MCP servers, sandbox and stores."""


def _kernel_id(connection_file: str | None) -> str:
    match = re.search(r"kernel-([\w-]+)\.json$", connection_file or "")
    return match.group(1) if match else uuid.uuid4().hex


class _CoDisplayPublisher(ZMQDisplayPublisher):
    """ipykernel's display publisher, flushing stdout and stderr only when they hold text.

    ipykernel flushes both streams before every display so printed text comes first; each
    flush waits for a round trip to the IOPub thread, a few milliseconds on a busy machine,
    and a streamed answer is one display and many updates. A stream with nothing written
    since its last flush has nothing to put first. The flags are ipykernel's own: a stream
    without them (redirected, another version) is always flushed.
    """

    def _flush_streams(self) -> None:
        for stream in (sys.stdout, sys.stderr):
            if getattr(stream, "_flush_pending", True) or getattr(
                stream, "_subprocess_flush_pending", True
            ):
                stream.flush()


class _CoShell(ZMQInteractiveShell):
    """IPython's shell for `%%python` cells, with its history kept in memory only.

    Co answers history requests from its own store (``co_kernel.store.CellHistory``), so
    IPython's ``history.sqlite`` is neither read nor written by a Co kernel.
    """

    display_pub_class = Type(_CoDisplayPublisher)

    def init_history(self) -> None:
        self.history_manager = HistoryManager(shell=self, parent=self, hist_file=":memory:")
        self.configurables.append(self.history_manager)  # pyright: ignore[reportArgumentType]  # a traitlets List of any configurable


class CoKernel(IPythonKernel):
    """Each cell is a turn to Co; `!` cells run in the sandbox; `%` cells are magics."""

    implementation = "co"
    implementation_version = __version__
    banner = "Co: an AI assistant in your notebook. Type %help for magics."  # pyright: ignore[reportAssignmentType]  # a property in ipykernel; wrapper kernels set it so
    language_info = {  # noqa: RUF012 - the kernel protocol's class attribute
        "name": "co",
        "version": __version__,
        "mimetype": "text/markdown",
        "file_extension": ".md",
        "codemirror_mode": "markdown",
        "pygments_lexer": "markdown",
    }
    help_links = ()  # type: ignore[assignment]
    shell_class = Type(_CoShell)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        shell = self.shell
        assert shell is not None  # IPythonKernel.__init__ made it
        self._dispatcher = CellDispatcher(
            shell,
            self._new_session,
            kernel=self,
            notebook_path=os.environ.get("JPY_SESSION_NAME"),
        )
        self._dispatcher.pending.status = self._status_for_page
        self._warmed = False
        self._busy_lock = threading.Lock()
        self._running_cell: dict[str, Any] | None = None
        self._cell_task: tuple[asyncio.AbstractEventLoop, asyncio.Future[Outcome]] | None = None
        """The main shell's running cell (its loop and task), for a shutdown to stop."""
        self._cell_replied = threading.Event()
        """Set while no main-shell cell is running, or once its execute_reply went out."""
        self._cell_replied.set()
        self._collector_settled = threading.Event()
        """Set once start-up's objects are frozen and the collector runs again."""
        # Co's folders are the user's alone: what an older Co (or a library, with the
        # umask's mode) left readable to others is narrowed before this kernel writes there.
        tighten_private_files(paths().folders)
        # History is kept per notebook (jupyter_server names it), else per folder.
        scope = os.environ.get("JPY_SESSION_NAME") or os.getcwd()
        self._history = CellHistory(history_path(), scope, self._kernel_id())

    # -- lifecycle ---------------------------------------------------------

    def _new_session(self) -> ChatSession:
        from ..config import load_settings
        from ..turn import ChatSession

        workspace = Path(os.getcwd())
        loaded = load_settings(workspace)
        return ChatSession(
            loaded,
            workspace=workspace,
            kernel_id=self._kernel_id(),
            notebook_path=os.environ.get("JPY_SESSION_NAME"),
        )

    def _kernel_id(self) -> str:
        connection_file = getattr(self.parent, "connection_file", None) if self.parent else None
        return _kernel_id(connection_file)

    async def kernel_info_request(self, stream: Any, ident: Any, parent: Any) -> None:
        await super().kernel_info_request(stream, ident, parent)
        # Only on the shell thread: the server also nudges over the control channel, and a
        # future made on the control thread's loop cannot be awaited by a cell.
        if not self._warmed and threading.current_thread() is threading.main_thread():
            # Import the model stack and build the session (settings, stores, toolsets,
            # agent, model client) off the critical path: the kernel has answered, and the
            # first turn pays for neither.
            self._warmed = True
            self._dispatcher.warmup = _warm_in_background(
                asyncio.get_running_loop(), self._dispatcher.prebuild, self._settle_collector
            )

    def _settle_collector(self) -> None:
        """Freeze what start-up made (it lives as long as the kernel) and collect again.

        ``python -m co_kernel`` starts with the collector off (``__main__``). Frozen objects
        are never scanned, so a full collection during a turn costs milliseconds instead of
        a tenth of a second. What among them becomes cyclic garbage is never freed: next to
        nothing of start-up's, and the first session's cycles if a change of trust or model
        replaces it (a rare, bounded cost). Once: a later freeze would keep the garbage of
        cells from being collected.
        """
        if not self._collector_settled.is_set():
            self._collector_settled.set()
            gc.freeze()
            gc.enable()

    @property
    def kernel_info(self) -> dict[str, Any]:
        # The JupyterLab status bar reads `co` here and in every execute_reply's metadata.
        # Never starts the session here: kernel_info also arrives on the control thread.
        return {**super().kernel_info, LAB_STATUS_KEY: lab_status(self._dispatcher.current_session)}

    def _publish_status(self, status: str, channel: str, parent: Any = None) -> None:
        # jupyter console (6.6.3 and before) ends a cell at any idle status of its own
        # session, not only its cell's, and then stops reading the stdin channel. The idle
        # of its kernel_info, is_complete or complete request, still queued when the cell
        # starts (it drains its IOPub only there), ended the cell before the kernel said
        # busy whenever the kernel took over 50 ms to start it: the cell's [y/n/a] or trust
        # question then waited for an answer the console never read, and both hung. So a
        # terminal client hears busy and idle of its cells alone.
        request: dict[str, Any] = parent or self.get_parent(channel)
        metadata: dict[str, Any] = request.get("metadata") or {}
        header: dict[str, Any] = request.get("header") or {}
        if (
            channel == "shell"
            and metadata.get(TERMINAL_METADATA)
            and header.get("msg_type") != "execute_request"
        ):
            return
        super()._publish_status(status, channel, parent)

    def finish_metadata(self, parent: Any, metadata: Any, reply_content: Any) -> Any:
        metadata = super().finish_metadata(parent, metadata, reply_content)
        metadata[LAB_STATUS_KEY] = lab_status(self._dispatcher.session)
        return metadata

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:  # type: ignore[override]
        await self._end_running_cell()
        try:
            # Bounded: a stuck MCP server or engine must not keep the kernel from exiting.
            await asyncio.wait_for(self._dispatcher.close(), _CLOSE_TIMEOUT)
        except TimeoutError:
            log.warning("closing the session took over %.0f s; exiting anyway", _CLOSE_TIMEOUT)
        self._history.close()
        return super().do_shutdown(restart)

    async def _end_running_cell(self) -> None:
        """Interrupt the cell still running and wait until its reply went out.

        A restart interrupts the kernel just before it asks for the shutdown, so a turn
        waiting for approval ends as the shutdown begins. As soon as the shutdown handler
        returns, ipykernel stops the thread whose socket carries the main shell's replies:
        without this wait the cell's reply would go into a closed socket (a ZMQError
        traceback in the server's log) and the page would never learn that the cell ended.
        """
        if self._cell_replied.is_set():
            return
        running = self._cell_task
        if running is not None:
            loop, task = running
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing runs any more
                loop.call_soon_threadsafe(task.cancel)
        # A thread waits, not this loop: the control channel still answers meanwhile. A
        # cell that ignores the cancel (Python busy in a %%python cell) is left to the
        # shutdown, which ends the process after a while.
        await asyncio.to_thread(self._cell_replied.wait, _CELL_END_TIMEOUT)

    # -- execution ---------------------------------------------------------

    async def do_execute(  # type: ignore[override]
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool = False,
        *,
        cell_meta: dict[str, Any] | None = None,
        cell_id: str | None = None,
    ) -> dict[str, Any]:
        shell = self.shell
        assert shell is not None  # made in the kernel's __init__
        count = shell.execution_count
        terminal = bool((cell_meta or {}).get(TERMINAL_METADATA))
        request = CellRequest(code, cell_id, allow_stdin, terminal=terminal)
        try:
            outcome = await self._interruptible(self._dispatcher.execute(request))
        except asyncio.CancelledError:
            outcome = self._dispatcher.fail("KeyboardInterrupt", INTERRUPTED)
        except Exception as exc:
            self.log.exception("Co failed on a cell")
            message = f"Co hit an internal error: {type(exc).__name__}: {exc}. The kernel is still running."
            outcome = self._dispatcher.fail(type(exc).__name__, message)
        if not self._warmed:
            # A client that never asked for kernel_info started no warm-up (which settles
            # the collector when it ends): the collector must not stay off for good.
            self._settle_collector()
        if store_history and not silent and code.strip():
            # After the cell: by then the session exists, and its redactor knows every
            # configured secret (no store of Co's keeps one).
            self._history.record(count, self._dispatcher.redact(code))
        if not silent and shell.execution_count == count:
            # %%python cells advance the counter through IPython itself; the rest here.
            shell.execution_count += 1
        # Past the counts the cells the agent ran meanwhile show (run_cell).
        shell.execution_count = max(shell.execution_count, self._dispatcher.notebook.next_count)
        reply: dict[str, Any] = {"status": outcome.status, "execution_count": count}
        if outcome.status == "ok":
            reply.update(payload=[], user_expressions={})
        else:
            redact = self._dispatcher.redact

            def shown(text: str) -> str:
                # A terminal client's reply is as inert as its outputs.
                return terminal_safe(redact(text)) if terminal else redact(text)

            reply.update(
                ename=outcome.ename,
                evalue=shown(outcome.evalue),
                traceback=[shown(line) for line in outcome.traceback],
            )
        return reply

    async def do_history(  # type: ignore[override]
        self,
        hist_access_type: str,
        output: bool,
        raw: bool,
        session: int = 0,
        start: int = 0,
        stop: int | None = None,
        n: int | None = None,
        pattern: str | None = None,
        unique: bool = False,
        **_: Any,
    ) -> dict[str, Any]:
        # Cells are kept as typed, so raw and translated input are the same text.
        history = self._history.request(
            hist_access_type, output=output, session=session, start=start, stop=stop, n=n,
            pattern=pattern, unique=unique,
        )  # fmt: skip
        return {"status": "ok", "history": history}

    async def _interruptible(self, coro: Any) -> Outcome:
        """Run a cell as a task that SIGINT (signal or interrupt_request) cancels at once.

        ipykernel's own ``_cancel_on_sigint`` schedules the cancel without waking the
        loop, so an awaited socket read would sit until the next message; cancelling
        through ``call_soon_threadsafe`` wakes it.
        """
        task = asyncio.ensure_future(coro)
        loop = asyncio.get_running_loop()

        notebook = self._dispatcher.notebook

        def on_sigint(signum: int, frame: Any) -> None:
            loop.call_soon_threadsafe(task.cancel)
            if notebook.executing and not _waiting_for_events(frame):
                # Python (a %%python cell or run_python) holds the main thread, so the
                # cancel can't run until it returns: stop it the IPython way first.
                raise KeyboardInterrupt

        previous = None
        main = threading.current_thread() is threading.main_thread()
        if main:
            previous = signal.signal(signal.SIGINT, on_sigint)
            self._cell_task = (loop, task)
        try:
            return await task
        finally:
            if main:
                self._cell_task = None
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    # -- the busy indicator --------------------------------------------------
    # While a cell runs, other requests come and go: JupyterLab opens a subshell for widget
    # messages over the control channel, a subshell answers comm messages. Each ends with its
    # own `idle`, and JupyterLab shows the last status it saw, whatever its parent: "Idle"
    # while the cell waits for an approval click. After each of them the running cell says
    # `busy` again (parented to its execute_request, so clients waiting for that request's
    # `idle` are unaffected). The lock orders it before the cell's own final `idle`.

    async def execute_request(self, stream: Any, ident: Any, parent: Any) -> None:
        if threading.current_thread() is not threading.main_thread():  # a subshell's cell
            return await super().execute_request(stream, ident, parent)
        with self._busy_lock:
            self._running_cell = parent
        self._cell_replied.clear()
        try:
            await super().execute_request(stream, ident, parent)
        finally:
            self._cell_replied.set()
            with self._busy_lock:
                self._running_cell = None

    async def process_control(self, msg: Any) -> None:
        await super().process_control(msg)
        self._still_busy()

    async def dispatch_shell(
        self, msg: Any, /, subshell_id: str | None = None, *, concurrent: bool = False
    ) -> None:
        await super().dispatch_shell(msg, subshell_id=subshell_id, concurrent=concurrent)
        if not concurrent:  # a concurrent comm message publishes no status of its own
            self._still_busy()

    def _status_for_page(self) -> dict[str, Any]:
        """A page opened the ``co.approvals`` comm: what its status item and indicator need.

        A page that connects while a cell runs gets no ``kernel_info_reply`` and, the comm
        being handled concurrently, no status until the cell ends ("Co | Unknown"): the
        running cell says ``busy`` again, and the status item's data goes in the comm.
        """
        self._still_busy()
        return lab_status(self._dispatcher.current_session)

    def _still_busy(self) -> None:
        with self._busy_lock:
            if self._running_cell is not None:
                self._publish_status("busy", "shell", self._running_cell)

    # -- completion and inspection (the logic lives in magics/_complete.py) --

    async def _magic_context(self) -> Any:
        from ..magics import MagicContext

        if self._dispatcher.warmup is not None:
            # Completers import pydantic-ai too; never beside the warm-up thread's import.
            await self._dispatcher.warmup
        return MagicContext(self._dispatcher.session, kernel=self)

    async def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:
        from ..magics import complete_reply

        return complete_reply(await self._magic_context(), code, cursor_pos)

    async def do_inspect(
        self, code: str, cursor_pos: int | None, detail_level: int = 0, omit_sections: Any = ()
    ) -> dict[str, Any]:
        from ..magics import inspect_reply

        return inspect_reply(code, cursor_pos, detail_level)

    async def do_is_complete(self, code: str) -> dict[str, Any]:
        from ..magics import is_complete_reply

        return is_complete_reply(code)


def _waiting_for_events(frame: Any) -> bool:
    """Whether the signal arrived while the event loop waited in its selector."""
    return frame is not None and frame.f_code.co_filename.endswith("selectors.py")


def _warm_in_background(
    loop: asyncio.AbstractEventLoop, then: Callable[[], None], last: Callable[[], None]
) -> asyncio.Future[None]:
    """Run the warm-up imports, then ``then``, then ``last`` (also when they failed), on a
    daemon thread; the future resolves after.

    Cells wait for the future, so nothing touches the session while ``then`` builds it.

    Not the loop's default executor: its threads are joined when the process exits, so a
    kernel shut down (or restarted) in its first seconds waited for pydantic-ai to finish
    importing, 2-3 s on a busy machine.
    """
    done: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    def run() -> None:
        try:
            _warm_imports()
            then()
        finally:
            last()
            with contextlib.suppress(RuntimeError):  # the loop closed: the kernel is exiting
                loop.call_soon_threadsafe(settle)

    threading.Thread(target=run, name="co-warm-imports", daemon=True).start()
    return done


def _warm_imports() -> None:
    import importlib

    for name in _WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # a broken optional provider must not break the kernel
            log.debug("warm-up import of %s failed", name, exc_info=True)
    try:
        # The OpenAI client builds its chunk types' validators on the first chunk of the
        # first stream (10-30 ms): build them here instead.
        from openai.types.chat import ChatCompletionChunk

        chunk = {"id": "warm", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": {"role": "assistant", "content": "."},
                              "finish_reason": None}]}  # fmt: skip
        ChatCompletionChunk.model_validate(chunk)
        ChatCompletionChunk.construct(**chunk)
    except Exception:
        log.debug("warming the chunk types failed", exc_info=True)
    try:
        # The OpenAI client converts every request's parameters by their TypedDicts, whose
        # type hints it resolves on first use and caches (20-40 ms in the first request):
        # resolve them here, with a request of each message kind and a tool. Its private
        # helper: should the SDK move it, only this warming is lost.
        from openai._utils import transform
        from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

        transform(_WARM_REQUEST, CompletionCreateParamsStreaming)
    except Exception:
        log.debug("warming the request conversion failed", exc_info=True)
    try:
        # pydantic-ai builds the messages' serializer and validator on first use, which
        # was the first turn's save to the session store (about 50 ms): build them here.
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json([]))
    except Exception:
        log.debug("warming the message adapter failed", exc_info=True)
    try:
        # pydantic-ai's first run in a process builds its run graph, event hooks and more;
        # a throwaway agent on an in-process model runs once, so the first turn does not.
        from ..turn import rehearse_agent_run

        rehearse_agent_run()
    except Exception:
        log.debug("rehearsing an agent run failed", exc_info=True)
    # Every Markdown output is rendered to sanitised HTML: markdown-it's rules, the lexers
    # and nh3's allowlist are built here rather than on the first answer's path.
    from ..frontend import warm_markdown

    warm_markdown()
