"""ChatSession: one kernel session's conversation, model and deps.

The session keeps the whole conversation; the model is sent the governed view of it
(``_govern.py``). After every turn the conversation is written to the session store
(``_persistence.py``), so ``%resume`` brings it back after a restart or a crash. Token
counts are ``_tokens.py``'s, compaction is ``_compact.py``'s; the session coordinates.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..exceptions import ConfigError
from ..inert import inert_code, inert_text
from ..session_state import CoDeps, Todo
from ..store import SubagentRow
from ..tools import outbound_ledger
from ._compact import CompactReport, SessionUsage, auto_compact, compact_session
from ._history_processors import govern_history
from ._persistence import SessionPersistence, TurnRecord
from ._run import TurnResult, run_turn
from ._session_model import SessionModel
from ._session_rules import SessionRules
from ._tokens import TokenCount, prompt_tokens

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.messages import ModelMessage, UserContent

    from ..config import LoadedSettings, Settings
    from ..models import ModelHandle
    from ..notebook import NotebookContext
    from ..replay import Recorder
    from ..sandbox import SandboxProtocol
    from ..store import SessionInfo, SessionStore
    from ._frontend import FrontendProtocol

__all__ = ["ChatSession", "TurnRecord"]


class ChatSession:
    """The conversation of one kernel session and what it needs to run turns."""

    def __init__(
        self,
        loaded: LoadedSettings,
        *,
        workspace: Path,
        kernel_id: str,
        store: SessionStore | None = None,
        notebook_path: str | None = None,
    ) -> None:
        from ..mcp import McpManager, mcp_log_dir
        from ..replay import Recorder
        from ..telemetry import SessionTelemetry

        self.loaded = loaded
        self.deps = CoDeps(
            settings=loaded.settings,
            session_id=uuid.uuid4().hex,
            kernel_id=kernel_id,
            workspace=workspace,
            notebook_path=notebook_path,
            project_trusted=loaded.trust is None or loaded.trust.trusted,
        )
        # The person's own domain allowlist: never one a project file set.
        if not loaded.origins.get("web_allowed_domains", "").startswith("project"):
            outbound_ledger(self.deps).person_domains = list(loaded.settings.web_allowed_domains)
        self.telemetry = SessionTelemetry(
            loaded.settings,
            kernel_id=kernel_id,
            settings_files=loaded.files,
            origins=loaded.origins,
        )
        recorder = self.deps.recorder = Recorder(redact=self.telemetry.redact)
        self.history: list[ModelMessage] = []
        self.turns: list[TurnRecord] = []
        self.compaction_usage = SessionUsage()
        self._pending_notices: list[str] = []
        """Notices from saves made without a frontend (compaction), shown on the next turn."""
        self._saved = SessionPersistence(
            self.deps, redact=self.telemetry.redact, store=store, notices=self._pending_notices
        )
        if loaded.settings.record_path:
            problem = _record_from_the_start(recorder, self.deps, loaded.settings.record_path)
            if problem is not None:
                self._pending_notices.append(problem)
        self.mcp = McpManager(
            loaded.settings.mcp_servers,
            workspace=workspace,
            log_dir=mcp_log_dir(),
            redact=self.telemetry.redact,
        )
        """The session's MCP servers; the kernel starts them with its first cell."""
        self.model = SessionModel(self.deps, self.telemetry, self.mcp)
        if not loaded.settings.model:
            from ..models import default_model_string

            # Asks Ollama now (answers are kept): the kernel builds the session off the
            # critical path, and kernel_info, which reads the model, never waits for it.
            default_model_string(loaded.settings)

    # -- what magics and the status report read (``SessionProtocol``) -------

    @property
    def settings(self) -> Settings:
        return self.deps.settings

    def update_settings(self, values: Mapping[str, Any]) -> None:
        """Settings read again (`%mcp reload`) take effect from the next tool call."""
        self.deps.settings = self.deps.settings.model_copy(update=dict(values))

    @property
    def session_id(self) -> str:
        return self.deps.session_id

    @property
    def workspace(self) -> Path:
        """The notebook's folder: the sandbox mount and the files tools' root."""
        return self.deps.workspace

    @property
    def project(self) -> Path | None:
        """The folder whose ``.co/`` files apply: the workspace once trusted, else None."""
        return self.deps.project

    @property
    def notebook_path(self) -> str | None:
        return self.deps.notebook_path

    @property
    def auto_confirm(self) -> bool:
        """Session yolo: every side-effectful call runs without asking."""
        return self.deps.auto_confirm

    @auto_confirm.setter
    def auto_confirm(self, value: bool) -> None:
        self.deps.auto_confirm = value

    @property
    def todos(self) -> list[Todo]:
        """The agent's checklist (the list the tools change: replace it in place)."""
        return self.deps.todos

    @property
    def recorder(self) -> Recorder | None:
        return self.deps.recorder

    @property
    def sandbox(self) -> SandboxProtocol | None:
        """The sandbox, once a `!` cell or a shell tool call started it."""
        return self.deps.sandbox

    @property
    def rules(self) -> SessionRules:
        """The permission rules of the session."""
        return SessionRules(self.deps)

    @property
    def can_delegate(self) -> bool:
        """Whether the model may start subagents (`subagent_max_depth`)."""
        from ..tools.subagents import can_delegate

        return can_delegate(self.deps)

    @property
    def store(self) -> SessionStore | None:
        """The session store, or None when `save_sessions` is off."""
        return self._saved.store

    @property
    def is_saved(self) -> bool:
        """Whether the conversation so far is in the session store."""
        return self._saved.working and bool(self.turns)

    @property
    def live_turns(self) -> list[TurnRecord]:
        """Turns still verbatim in the history (not folded into a summary)."""
        return [t for t in self.turns if t.start is not None]

    def ensure_agent(self) -> tuple[Agent[CoDeps, str | DeferredToolRequests], ModelHandle]:
        """Build the model and agent on first use; raises ConfigError with the fix."""
        return self.model.ensure_agent()

    def accepts_images(self) -> bool:
        """Whether the session's model is sent images (setting `model_accepts_images`);
        False while no model can be built (the turn then says why)."""
        from ..notebook import model_accepts_images

        try:
            _agent, handle = self.ensure_agent()
        except ConfigError:
            return False
        return model_accepts_images(handle.model, self.settings.model_accepts_images)

    # -- conversation state ------------------------------------------------

    def clear(self) -> str:
        """Start an empty conversation under a new id; returns the old id (still saved)."""
        old = self.deps.session_id
        self.history = []
        self.turns = []
        self.compaction_usage = SessionUsage()
        self.deps.todos.clear()
        domains = outbound_ledger(self.deps).person_domains
        outbound_ledger(self.deps, fresh=True).person_domains = domains
        self.deps.session_id = uuid.uuid4().hex
        self._saved.start_new()
        return old

    def take_over(self, old: ChatSession) -> None:
        """Carry on ``old``'s conversation (the session was rebuilt because its settings
        changed, e.g. the folder was trusted): the same id, history, checklist, session
        rules and yolo; the model, tools and MCP servers are this session's own."""
        self.history = old.history
        self.turns = old.turns
        self.compaction_usage = old.compaction_usage
        self.deps.session_id = old.deps.session_id
        self.deps.todos = old.deps.todos
        self.deps.auto_confirm = old.deps.auto_confirm
        self.deps.session_rules = old.deps.session_rules
        # What the person gave and what Co read belong to the conversation, which goes on.
        domains = outbound_ledger(self.deps).person_domains
        outbound_ledger(self.deps, use=outbound_ledger(old.deps)).person_domains = domains
        self._saved.continue_from(old._saved)

    def sent_view(self) -> list[ModelMessage]:
        """The history as the model is sent it (window and trimming applied)."""
        return govern_history(self.history, self.settings)

    async def prompt_tokens(self, prompt: str | None = None) -> TokenCount:
        """Tokens of the next request (``_tokens.prompt_tokens``), with ``prompt`` as its
        prompt (None: the conversation as it stands)."""
        return await prompt_tokens(self.history, self.deps, self.model.handle, prompt)

    def resume(self, session_id: str | None) -> SessionInfo:
        """Replace the conversation with a saved one (an id prefix, or None for the latest).

        Raises SessionLookupError (a LookupError) with what to type instead.
        """
        stored, self.compaction_usage = self._saved.load(session_id)
        self.history = stored.messages
        self.turns = stored.turns
        ledger = outbound_ledger(self.deps)
        for turn in self.turns:
            ledger.note_person_text(turn.prompt)
        return stored.info

    def save(
        self, *, from_message: int = 0, from_turn: int = 0, frontend: FrontendProtocol | None = None
    ) -> bool:
        """Write the conversation from those points on; never raises (a notice instead)."""
        return self._saved.save(
            self.history,
            self.turns,
            self.compaction_usage,
            model=lambda: self.model.name,
            from_message=from_message,
            from_turn=from_turn,
            frontend=frontend,
        )

    async def compact(self, focus: str | None = None) -> CompactReport:
        """Replace older turns with a summary; the last `compact_keep_turns` stay verbatim."""
        return await compact_session(self, focus)

    # -- turns -------------------------------------------------------------

    def open_audit_log(self) -> None:
        """Open the audit log tool calls are recorded in, if not yet open."""
        if self.deps.audit is None:
            self.deps.audit = self.telemetry.audit_log()

    def attach_notebook(self, notebook: NotebookContext) -> None:
        """The kernel's Python namespace and recent cells, for the tools that read them."""
        self.deps.notebook = notebook

    async def _before_turn(self, frontend: FrontendProtocol) -> None:
        """Open the audit log; show what waited to be said; let MCP servers settle."""
        from ._definitions import new_definition_problems

        self.open_audit_log()
        for problem in self.telemetry.take_problems():
            frontend.on_notice(problem, "warning")
        for notice in self._pending_notices:
            frontend.on_notice(notice, "warning")
        self._pending_notices.clear()
        # Skill and subagent files that could not be read, once each (`%skills` lists all).
        problems = new_definition_problems(self.deps)
        if problems:
            lines = "\n".join(f"- {inert_code(p)}" for p in problems)
            frontend.on_notice(f"Some skill or subagent files were skipped:\n{lines}", "warning")
        await self.mcp.before_turn(lambda text: frontend.on_notice(text, "warning"))

    async def run_prompt(
        self,
        prompt: str,
        *,
        cell_id: str | None,
        frontend: FrontendProtocol,
        attachments: Sequence[UserContent] = (),
        typed: str | None = None,
    ) -> TurnResult | None:
        """Run one turn; re-running the last turn's cell replaces that turn.

        ``attachments``: what goes with the prompt's text, such as the images of `@name`
        figures (pydantic-ai ``BinaryContent``). ``typed``: the cell as the person wrote
        it, before `@name` references were expanded (default ``prompt``): its URLs are
        the ones they gave."""
        refusal = _refusal(prompt, self.settings.max_prompt_chars)
        if refusal:
            frontend.on_notice(refusal, "error")
            return None
        try:
            agent, handle = self.ensure_agent()
        except ConfigError as exc:
            frontend.on_notice(str(exc), "error")
            return None
        if not await self.model.prepare(handle, frontend):
            return None
        last = self.turns[-1] if self.turns else None
        if cell_id and last is not None and last.cell_id == cell_id and last.start is not None:
            # Regenerate: the last turn's cell ran again, so its turn is replaced.
            self.turns.pop()
            self.history = self.history[: last.start]
        await auto_compact(self, prompt, frontend)
        start = len(self.history)
        turn_number = len(self.turns)
        self.deps.turn_index = turn_number + 1
        ledger = outbound_ledger(self.deps)
        ledger.note_person_text(prompt if typed is None else typed)
        if typed is not None and typed != prompt:
            # What `@name` and `{name}` put into the prompt is the notebook's data, not the
            # person's words: its lines are private text.
            own = set(typed.splitlines())
            added = [line for line in prompt.splitlines() if line not in own]
            ledger.note_private("@references", "\n".join(added))
        await self._before_turn(frontend)
        with self.telemetry.turn(
            session_id=self.deps.session_id,
            turn=self.deps.turn_index,
            model=handle.label,
            prompt=prompt,
            notebook=self.deps.notebook_path,
        ) as span:
            result = await run_turn(
                agent,
                [prompt, *attachments] if attachments else prompt,
                deps=self.deps,
                history=self.history,
                frontend=frontend,
                provider=handle.provider,
                model_label=handle.label,
                capabilities=self.telemetry.capabilities,
            )
            span.finish(result)
        for warning in self.telemetry.take_budget_warnings():
            frontend.on_notice(warning, "warning")
        self.mcp.after_turn()
        self.history = result.messages
        if len(self.history) > start:
            usage = result.usage
            self.turns.append(
                TurnRecord(
                    prompt=prompt,
                    start=start,
                    cell_id=cell_id,
                    model=handle.label,
                    input_tokens=getattr(usage, "input_tokens", 0) or 0,
                    output_tokens=getattr(usage, "output_tokens", 0) or 0,
                    requests=getattr(usage, "requests", 0) or 0,
                    cost=result.cost.cost,
                    cost_unknown=result.cost.unknown,
                    subagents=[
                        SubagentRow(
                            s.name,
                            s.model,
                            s.usage.input_tokens,
                            s.usage.output_tokens,
                            s.usage.requests,
                            s.cost.cost,
                        )
                        for s in result.subagents
                    ],
                )
            )
        self.save(from_message=start, from_turn=turn_number, frontend=frontend)
        return result

    def close(self) -> None:
        """Stop what the session started (model server, store, spans still to export, audit)."""
        self.model.drop()
        self._saved.close()
        self.telemetry.close()
        self.deps.audit = None
        for resource in self.deps.extras.values():  # tools' stores and watchers
            close = getattr(resource, "close", None)
            if callable(close):
                close()

    async def aclose(self) -> None:
        """Close the session, its MCP servers first and its sandbox last."""
        await self.mcp.close()
        self.close()
        sandbox = self.deps.sandbox
        if sandbox is not None:
            await sandbox.close()


def _refusal(prompt: str, limit: int) -> str | None:
    """A readable refusal for a prompt Co will not send (`max_prompt_chars`), or None."""
    if len(prompt) > limit:
        return (
            f"This cell has {len(prompt):,} characters; Co sends at most {limit:,} per prompt "
            "(setting `max_prompt_chars`). Save large text to a file in the notebook's "
            "folder and ask Co to read it instead. The conversation is unchanged."
        )
    return None


def _record_from_the_start(recorder: Recorder, deps: CoDeps, record_path: str) -> str | None:
    """Setting `record_path`: record from the first cell, unless that is the replayed
    script; the notice to show when Co cannot."""
    from ..replay import replayed_script

    record_to = deps.workspace / Path(record_path).expanduser()
    problem = None
    if replayed_script(deps.settings.model, deps.workspace) == record_to.resolve():
        problem = "it is the script this session replays (`model`)"
    else:
        try:
            recorder.start(record_to)
        except OSError as exc:
            problem = inert_text(exc)
    if problem is None:
        return None
    return f"Co is not recording into {inert_code(record_to)} (setting `record_path`): {problem}."
