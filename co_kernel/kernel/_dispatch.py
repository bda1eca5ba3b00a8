"""Cell dispatch: first match wins.

blank -> nothing; ``!cmd`` -> the sandbox; ``%%python`` / ``%python`` -> the kernel's own
Python; ``%magic`` -> magics; anything else -> a turn (with ``{name}`` and ``@name``
references to the Python namespace resolved).
The kernel hands every cell here with what the frontend told it; this module picks the
frontend implementation and returns an outcome the kernel turns into a reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..frontend import (
    ConsoleFrontend,
    HeadlessFrontend,
    KernelPublisher,
    KernelStdin,
    NotebookFrontend,
    PendingApprovals,
    Publisher,
    RedactingPublisher,
    StdinApprover,
    TerminalPublisher,
    WidgetApprover,
    policy_approver,
    render_markdown,
    terminal_safe,
    terminal_width,
)
from ..inert import inert_text
from ..magics import MagicContext, MagicError, RunPrompt, find_magic, parse_magic
from ..notebook import CellRecord, FolderImports, NotebookContext, expand_references
from ._trust_gate import TrustGate, trusts_code

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..frontend import Approver, BaseFrontend, JupyterKernel, JupyterShell
    from ..turn import ChatSession

__all__ = ["CellDispatcher", "CellRequest", "Outcome", "frontend_kind"]

log = logging.getLogger(__name__)

_BUILD_WAIT = 5.0
"""Seconds a shutdown waits for the warm-up thread to finish building the session."""


FrontendKind = Literal["notebook", "console", "headless"]

INTERRUPTED = "Interrupted."
"""The error output's text for a cell stopped by an interrupt (IPython's KeyboardInterrupt)."""


@dataclass
class CellRequest:
    """One execute_request as the dispatcher needs it."""

    code: str
    """The cell's text."""
    cell_id: str | None
    """JupyterLab's cellId, when sent."""
    allow_stdin: bool
    """Whether the client can answer input requests."""
    terminal: bool = False
    """Whether the client asked for terminal text (``TERMINAL_METADATA``)."""


@dataclass
class Outcome:
    """How a cell ended, for the execute_reply."""

    status: Literal["ok", "error"] = "ok"
    """Reply status."""
    ename: str = ""
    """Error name for an error reply."""
    evalue: str = ""
    """Readable message for an error reply."""
    traceback: list[str] = field(default_factory=list[str])
    """The error output's lines, which the reply carries too: nbclient, nbconvert and
    papermill build their message from the reply, not from the output."""


def frontend_kind(request: CellRequest) -> FrontendKind:
    """Which frontend sent the cell (see ``co_kernel.frontend``).

    Terminal text only for a client that asks for it: ``allow_stdin`` alone is every
    jupyter_client's default, and those clients show Markdown ``display_data``.
    """
    if request.cell_id:
        return "notebook"
    if request.terminal and request.allow_stdin:
        return "console"
    return "headless"


class CellDispatcher:
    """Routes cells; owns nothing but the wiring between kernel, session and frontends."""

    def __init__(
        self,
        shell: JupyterShell,
        session_factory: Callable[[], ChatSession],
        *,
        kernel: JupyterKernel | None = None,
        notebook_path: str | None = None,
    ) -> None:
        self._shell = shell
        self._session_factory = session_factory
        self._session: ChatSession | None = None
        self._kernel = kernel
        # Every output of every cell passes the session's redactor (API keys, tokens), and
        # a terminal client's cells the terminal sanitiser after it.
        kernel_publisher = KernelPublisher(shell)
        self.terminal = TerminalPublisher(kernel_publisher)
        self.redacting = RedactingPublisher(
            self.terminal, self.redact, image_hosts=self._image_hosts
        )
        self.pending = PendingApprovals(self.redact, kernel_publisher.origin)
        """The calls waiting for approval, for pages that lack their card."""
        if kernel is not None:
            self.pending.register(kernel.comm_manager)
        self.publisher: Publisher = self.redacting
        # Only the page of the notebook the server started the kernel for answers for it.
        self.notebook = NotebookContext(shell, notebook_path=notebook_path)
        if kernel is not None:
            self.notebook.page.register(kernel.comm_manager)
        # An approved edit goes to the page where the person approved it: its undo reverts it.
        self.pending.decided_from = self.notebook.page.prefer
        # `import mymod` in the person's Python finds the notebook's folder once it is
        # trusted; nothing else in the kernel ever does (notebook/_imports.py says why).
        FolderImports(
            lambda: self.notebook.namespace, self._code_folder, self._trusts_code
        ).install()
        self.approvers: dict[str, Approver] = {}
        self._warned_settings = False
        self.warmup: Any = None
        """Future of the background import of the model stack; cells wait for it so two
        threads never import the same modules at once."""
        self._building = threading.Lock()
        """Held while the warm-up thread builds the session, so a shutdown never closes
        half a session, nor leaves one built after it."""
        self._closed = False
        self._console_width: int | None = None
        """The terminal's columns while a `jupyter console` cell runs in one; else None."""
        self.trust = TrustGate(self.publisher, self.pending, kernel, self._rebuild_session)
        """Keeps the session in step with the folder's trust; asks about it once."""

    def prebuild(self) -> None:
        """Build the session, its agent and audit log before the first cell (the warm-up
        thread; the audit log opens a connection per thread).

        A failure is left for the first turn, which builds again and shows the fix.
        """
        with self._building:
            if self._closed:  # the kernel is shutting down: nothing to build for
                return
            try:
                session = self.session
                session.ensure_agent()
                session.open_audit_log()
            except Exception:
                log.debug("building the session ahead of the first cell failed", exc_info=True)
                return
            try:
                session.model.prewrite_tools()
            except Exception:
                log.debug(
                    "rewriting the tools' schemas ahead of the first cell failed", exc_info=True
                )

    def _code_folder(self) -> Path | None:
        session = self._session
        return session.workspace if session is not None else None

    def _trusts_code(self, folder: Path) -> bool:
        session = self._session
        return session is not None and session.workspace == folder and trusts_code(session)

    @property
    def session(self) -> ChatSession:
        if self._session is None:
            self._session = self._session_factory()
            self._session.attach_notebook(self.notebook)
        return self._session

    def redact(self, text: str) -> str:
        """Text with the session's known secrets replaced (the environment's without one)."""
        try:
            return self.session.telemetry.redact(text)
        except Exception:  # no session (settings failed to load): the environment's secrets
            from ..telemetry import Redactor

            return Redactor.from_settings(None).redact(text)

    def _image_hosts(self) -> list[str]:
        """The hosts whose images load without a click; none before a session exists."""
        session = self._session
        return session.settings.image_hosts if session is not None else []

    @property
    def current_session(self) -> ChatSession | None:
        """The session if one has started; never starts one (safe from any thread)."""
        return self._session

    def make_frontend(self, request: CellRequest) -> BaseFrontend:
        frontend = self._make_frontend(request)
        frontend.footer_mode = self.session.settings.show_footer
        return frontend

    def _make_frontend(self, request: CellRequest) -> BaseFrontend:
        """The frontend for who sent the cell, with its way of asking for approval.

        Notebook -> a widget card; console -> a ``[y/n/a]`` input request on stdin;
        headless -> the ``approval_mode`` policy, printed in the cell. Without a kernel
        (no comms, no stdin channel) the policy answers everywhere.
        """
        settings = self.session.settings
        kind = frontend_kind(request)
        rate = settings.stream_max_updates_per_second
        policy = policy_approver(settings.approval_mode)
        if kind == "notebook":
            import asyncio

            loop = asyncio.get_running_loop()
            self.pending.unseen_timeout = settings.approval_timeout_unseen
            approver = self.approvers.get("notebook") or (
                WidgetApprover(self.publisher, self.pending) if self._kernel is not None else policy
            )
            return NotebookFrontend(
                self.publisher, approver, max_rate=rate, call_later=loop.call_later
            )
        if kind == "console":
            approver = self.approvers.get("console") or (
                StdinApprover(KernelStdin(self._kernel), self.publisher)
                if self._kernel is not None
                else policy
            )
            return ConsoleFrontend(
                self.publisher, approver, max_rate=rate, width=self._console_width
            )
        return HeadlessFrontend(self.publisher, settings.approval_mode)

    def show_markdown(self, text: str) -> None:
        # jupyter console prints text/plain: rendered for its terminal when there is one.
        # Its file names and values are outside text: shown, not obeyed, before Co styles it.
        plain = (
            render_markdown(terminal_safe(text, keep_sgr=False), self._console_width)
            if self._console_width
            else text
        )
        self.publisher.display({"text/markdown": text, "text/plain": plain})

    def fail(self, ename: str, message: str) -> Outcome:
        """End the cell with an ``error`` output (the readable message, no Python stack).

        Every cell whose reply is an error ends with exactly one such output, so clients
        that save or look for ``error`` messages (nbclient, papermill, nbval) see it.
        """
        lines = message.rstrip("\n").splitlines() or [ename]
        self.publisher.error(ename, message, lines)
        return Outcome("error", ename, message, lines)

    async def execute(self, request: CellRequest) -> Outcome:
        try:
            outcome = await self._execute(request)
        except asyncio.CancelledError:
            # An interrupt outside a turn (a turn ends itself): a magic, a model loading.
            outcome = self.fail("KeyboardInterrupt", INTERRUPTED)
        finally:
            self.redacting.drain()
        if outcome.evalue:
            outcome.evalue = self.redact(outcome.evalue)
        return outcome

    async def _execute(self, request: CellRequest) -> Outcome:
        self._console_width = terminal_width() if frontend_kind(request) == "console" else None
        self.terminal.active = request.terminal
        code = request.code
        stripped = code.strip()
        if not stripped:
            return Outcome()
        if self.warmup is not None:
            await self.warmup
            self.warmup = None
        # Before anything of the folder's can act: its trust (which may rebuild the session).
        await self.trust.before_cell(self.session, frontend_kind(request), stripped)
        # MCP servers connect in the background from the first cell on (after the warm-up:
        # their client is imported in a thread too).
        self.session.mcp.start()
        self._report_settings_problems()
        if stripped.startswith("!"):
            self.notebook.record(CellRecord("shell", stripped))
            return await self._run_shell(stripped[1:].strip(), request)
        first, _, rest = stripped.partition("\n")
        if first.strip() == "%%python":
            return await self._run_python(rest)
        if first.startswith("%python ") or first.strip() == "%python":
            return await self._run_python(stripped[len("%python") :].strip())
        if stripped.startswith("%"):
            self.notebook.record(CellRecord("magic", stripped))
            return await self._run_magic(stripped, request)
        return await self._run_turn(code.strip(), request)

    async def _run_python(self, code: str) -> Outcome:
        if not code.strip():
            message = (
                "Usage: %%python on the first line, then Python code (or %python <expression>)."
            )
            return self.fail("UsageError", message)
        run = await self.notebook.run_cell(code)
        if run.ename:
            shown = run.error or f"{run.ename}: {run.evalue or ''}"
            return Outcome("error", run.ename, run.evalue or "", shown.rstrip("\n").splitlines())
        return Outcome()

    def _report_settings_problems(self) -> None:
        if self._warned_settings:
            return
        self._warned_settings = True
        problems = self.session.loaded.problems
        if problems:
            lines = "\n".join(f"- {inert_text(p)}" for p in problems)
            # Ignored values, and secrets still written in a settings file.
            self.show_markdown(f"⚠️ Settings need attention:\n{lines}")

    async def _run_turn(self, prompt: str, request: CellRequest) -> Outcome:
        frontend = self.make_frontend(request)
        # Only a prompt that may attach something asks whether the model reads images.
        send_images = "@" in prompt and self.session.accepts_images()
        expanded = expand_references(prompt, self.notebook.namespace, send_images=send_images)
        try:
            result = await self.session.run_prompt(
                expanded.text,
                cell_id=request.cell_id,
                frontend=frontend,
                attachments=[image.binary() for image in expanded.images],
                typed=prompt,
            )
        finally:
            frontend.cleanup()
        self.notebook.record(
            CellRecord(
                "prompt",
                prompt,
                result.output[:300] if result else "",
                result.error if result else "the turn did not run",
            )
        )
        if result is None or result.error:
            # The frontend kept the turn's error notices for this one output.
            failure = "\n\n".join(frontend.failures) or (result and result.error)
            return self.fail("CoError", failure or "The turn did not run.")
        if result.interrupted:
            return self.fail(
                "KeyboardInterrupt",
                f"{INTERRUPTED} The partial answer above is kept; carry on in the next cell.",
            )
        return Outcome()

    async def _run_magic(self, line: str, request: CellRequest) -> Outcome:
        name, args = parse_magic(line.splitlines()[0])
        ctx = MagicContext(
            self.session,
            kernel=self._kernel,
            cell_id=request.cell_id,
            frontend=frontend_kind(request),
        )
        try:
            module = find_magic(name)
            output = await module.run(ctx, args)
        except MagicError as exc:
            usage = ""
            with contextlib.suppress(MagicError):
                usage = f" Usage: {find_magic(name).USAGE}"
            message = f"{exc}{usage if usage and usage.strip() not in str(exc) else ''}"
            return self.fail("MagicError", message)
        # `%trust` and `%trust revoke` take effect now, not at the next cell.
        await self.trust.sync(self.session)
        if isinstance(output, RunPrompt):
            return await self._run_turn(output.text, request)
        if output:
            self.show_markdown(output)
        return Outcome()

    async def _run_shell(self, command: str, request: CellRequest) -> Outcome:
        # The Docker client loads with the first `!` cell, not with the kernel.
        from ._sandbox_cell import run_shell_cell

        try:
            failed = await run_shell_cell(self.session.deps, self.publisher, command)
        except asyncio.CancelledError:
            return self.fail("KeyboardInterrupt", f"{INTERRUPTED} The command was killed.")
        return self.fail(*failed) if failed else Outcome()

    async def _rebuild_session(self) -> ChatSession:
        """A new session from the settings as they are now, carrying on the conversation."""
        old, self._session = self._session, None
        session = self.session
        if old is not None:
            session.take_over(old)
            await old.aclose()
        return session

    async def close(self) -> None:
        """Release what the session started (replay server, sandbox container).

        Waits (a few seconds at most) for the warm-up thread to finish building the
        session, which it then closes; the thread builds nothing afterwards.
        """
        self._closed = True
        if await asyncio.to_thread(self._building.acquire, True, _BUILD_WAIT):
            self._building.release()
        else:
            log.warning("the session was still being built at shutdown; not closing it")
            return
        if self._session is None:
            return
        session, self._session = self._session, None
        await session.aclose()
