"""ChatSession: one kernel session's conversation, model and deps.

The session keeps the whole conversation; the model is sent the governed view of it
(``_govern.py``). After every turn the conversation is written to the session store, so
``%resume`` brings it back after a restart or a crash.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..config import parse_model_string
from ..deps import CoDeps
from ..exceptions import CompactError, ConfigError
from ..models import build_model
from ..store import SessionConflict, SessionStore, TurnRow, session_store_path
from ._compact import compacted_history, render_transcript, split_for_compaction
from ._history import estimate_tokens, govern_history, token_calibration
from ._run import TurnResult, run_turn

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage

    from ..config import LoadedSettings
    from ..mcp import McpServersToolset
    from ..models import ModelHandle
    from ..store import Revision, SessionInfo
    from ..testing import Recorder
    from ..tools import ToolsetBuild
    from ._frontend import FrontendProtocol

__all__ = ["ChatSession", "CompactReport", "TokenCount", "TurnRecord"]

log = logging.getLogger(__name__)

TurnRecord = TurnRow
"""A turn of the conversation: prompt, cell, where it starts in the history, its usage."""


@dataclass
class CompactReport:
    """What a compaction did."""

    folded_turns: int
    """Turns replaced by the summary (an earlier summary counts as none)."""
    kept_turns: int
    """Turns kept verbatim after the summary."""
    tokens_before: int
    """Estimated tokens the model was sent before."""
    tokens_after: int
    """Estimated tokens it is sent now."""
    summary: str
    """The summary text."""


@dataclass(frozen=True)
class TokenCount:
    """Prompt tokens of the next request, and how they were counted."""

    tokens: int
    """The count."""
    how: Literal["tokenizer", "calibrated", "estimated"]
    """By the model's own tokenizer (its server), estimated and calibrated by what the
    provider reported for the last requests, or estimated alone (nothing reported yet)."""


def _last_reported(history: list[ModelMessage]) -> tuple[int, int] | None:
    """(index, prompt tokens) of the last response whose provider reported its prompt
    tokens, or None."""
    from pydantic_ai.messages import ModelResponse

    for i in range(len(history) - 1, 0, -1):
        msg = history[i]
        if isinstance(msg, ModelResponse) and msg.usage.input_tokens > 0:
            return i, msg.usage.input_tokens
    return None


@dataclass
class SessionUsage:
    """Usage outside turns (compaction requests), kept with the session."""

    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""
    requests: int = 0
    """Model requests."""


class ChatSession:
    """The conversation of one kernel session and what it needs to run turns."""

    def __init__(
        self,
        loaded: LoadedSettings,
        *,
        workspace: Path,
        kernel_id: str,
        store: SessionStore | None = None,
    ) -> None:
        from ..telemetry import SessionTelemetry

        self.loaded = loaded
        self.deps = CoDeps(
            settings=loaded.settings,
            session_id=uuid.uuid4().hex,
            kernel_id=kernel_id,
            workspace=workspace,
        )
        self.telemetry = SessionTelemetry(
            loaded.settings,
            kernel_id=kernel_id,
            settings_files=loaded.files,
        )
        from ..testing import Recorder

        recorder = self.deps.recorder = Recorder(redact=self.telemetry.redact)
        self.history: list[ModelMessage] = []
        self.turns: list[TurnRecord] = []
        self.model_override: str | None = None
        self.compaction_usage = SessionUsage()
        self._handle: ModelHandle | None = None
        self._agent: Agent[CoDeps, Any] | None = None
        self.toolsets: list[ToolsetBuild] = []
        self.tools_unavailable: str | None = None
        """Why the model gets no tools at all (a tiny local model), for `%tools`."""
        self._default_notice_shown = False
        self.provider_models: dict[str, list[str]] = {}
        """Model ids providers listed when asked (`%model`), for Tab completion."""
        self._store = store
        self._store_failed = False
        self._revision: Revision | None = None
        """The store write this session continues from (None: a new session)."""
        self._pending_notices: list[str] = []
        """Notices from saves made without a frontend (compaction), shown on the next turn."""
        if loaded.settings.record_path:
            self._record_from_the_start(recorder, loaded.settings.record_path)
        self._meta_extra: dict[str, str] = {}
        """Kept in the stored session's meta (``forked_from``)."""
        from ..mcp import McpManager, mcp_log_dir

        self.mcp = McpManager(
            loaded.settings.mcp_servers,
            workspace=workspace,
            log_dir=mcp_log_dir(),
            redact=self.telemetry.redact,
        )
        """The session's MCP servers; the kernel starts them with its first cell."""
        self._mcp_toolset: McpServersToolset | None = None
        """The one toolset the agent gets for all servers; it offers the connected ones."""
        if not loaded.settings.model:
            from ..models import default_model_string

            # Asks Ollama now (answers are kept): the kernel builds the session off the
            # critical path, and kernel_info, which reads the model, never waits for it.
            default_model_string(loaded.settings)

    def _record_from_the_start(self, recorder: Recorder, record_path: str) -> None:
        """Setting `record_path`: record from the first cell, unless that is the replayed script."""
        from ..testing import replayed_script

        workspace = self.deps.workspace
        record_to = workspace / Path(record_path).expanduser()
        problem = None
        if replayed_script(self.settings.model, workspace) == record_to.resolve():
            problem = "it is the script this session replays (`model`)"
        else:
            try:
                recorder.start(record_to)
            except OSError as exc:
                problem = str(exc)
        if problem is not None:
            self._pending_notices.append(
                f"Co is not recording into `{record_to}` (setting `record_path`): {problem}."
            )

    @property
    def settings(self) -> Any:
        return self.deps.settings

    @property
    def session_id(self) -> str:
        return self.deps.session_id

    @property
    def model_string(self) -> str | None:
        """The model in use: chosen with `%model`, configured, or the bundled default."""
        from ..models import default_model_string

        return self.model_override or self.settings.model or default_model_string(self.settings)

    @property
    def model_handle(self) -> ModelHandle | None:
        """The model built for the last turn, if any (for `%status`)."""
        return self._handle

    @property
    def store(self) -> SessionStore | None:
        """The session store, or None when `save_sessions` is off."""
        if not self.settings.save_sessions:
            return None
        if self._store is None:
            self._store = SessionStore(session_store_path(), redact=self.telemetry.redact)
        return self._store

    @property
    def is_saved(self) -> bool:
        """Whether the conversation so far is in the session store."""
        return self.store is not None and not self._store_failed and bool(self.turns)

    @property
    def model_base_url(self) -> str | None:
        """Where the current model's requests go, once it is built."""
        return self._handle.base_url if self._handle is not None else None

    @property
    def live_turns(self) -> list[TurnRecord]:
        """Turns still verbatim in the history (not folded into a summary)."""
        return [t for t in self.turns if t.start is not None]

    def set_model(self, value: str) -> str:
        """Switch the model for the rest of the session; returns provider:model."""
        provider, name = parse_model_string(value)
        self.model_override = f"{provider}:{name}"
        self._drop_agent()
        # What the dropped agent was built with: %tools and %status must not show the old
        # model's toolsets after a switch (the session is built before the first cell).
        self.toolsets = []
        self.tools_unavailable = None
        return self.model_override

    def _drop_agent(self) -> None:
        if self._handle is not None:
            self._handle.close()
        self._handle = None
        self._agent = None

    def ensure_agent(self) -> tuple[Agent[CoDeps, Any], ModelHandle]:
        """Build the model and agent on first use; raises ConfigError with the fix."""
        if self._agent is None or self._handle is None:
            from ..mcp import McpServersToolset
            from ._agent import build_session_agent

            if self._mcp_toolset is None:
                self._mcp_toolset = McpServersToolset(self.mcp)
            built = build_session_agent(
                self.settings,
                self.model_override or self.settings.model,
                base_dir=self.deps.workspace,
                capabilities=self.telemetry.capabilities(),
                # Always there, so `%mcp reload` can add servers to a built agent.
                extra_toolsets=[self._mcp_toolset],
                recorder=self.deps.recorder,
            )
            self.mcp.reserve(built.toolsets)
            self.toolsets = built.toolsets
            self.tools_unavailable = built.tools_unavailable
            self._agent = built.agent
            self._handle = built.handle
        return self._agent, self._handle

    async def _prepare(self, handle: ModelHandle, frontend: FrontendProtocol) -> bool:
        """Start what the model needs (a local server) and say once that it is the default."""
        if handle.local is not None:
            try:
                await handle.local.prepare(frontend)
            except ConfigError as exc:
                frontend.on_notice(str(exc), "error")
                # Rebuilt on the next turn, so a fixed file or setting is picked up.
                self._drop_agent()
                return False
        if handle.default and not self._default_notice_shown:
            self._default_notice_shown = True
            frontend.on_notice(_default_notice(handle), "info")
        return True

    # -- conversation state ------------------------------------------------

    def clear(self) -> str:
        """Start an empty conversation under a new id; returns the old id (still saved)."""
        old = self.deps.session_id
        self.history = []
        self.turns = []
        self.compaction_usage = SessionUsage()
        self.deps.todos.clear()
        self.deps.session_id = uuid.uuid4().hex
        self._revision = None
        self._meta_extra = {}
        return old

    @property
    def context_window(self) -> int:
        """Tokens the model takes: `context_window_tokens`, or less for a local model."""
        window = self.settings.context_window_tokens
        handle = self._handle
        if handle is not None and handle.context_tokens:
            return min(window, handle.context_tokens)
        return window

    def sent_view(self) -> list[ModelMessage]:
        """The history as the model is sent it (window and trimming applied)."""
        return govern_history(self.history, self.settings)

    def _next_request(
        self, prompt: str | None
    ) -> tuple[list[ModelMessage], str, Callable[[str], str]]:
        """(governed messages, instructions, per-prompt context) of the next request, with
        ``prompt`` as its prompt (None: the conversation as it stands)."""
        from pydantic_ai.messages import ModelRequest, UserPromptPart

        from ..tools.memory import memory_prompt
        from ._agent import co_instructions

        pending = list(self.history)
        if prompt is not None:
            pending.append(ModelRequest(parts=[UserPromptPart(prompt)]))
        compact = self._handle is not None and self._handle.compact_prompt
        instructions = co_instructions(self.deps, compact=compact)
        # With the memories each prompt is sent with (the same prompts recur below).
        context = functools.cache(functools.partial(memory_prompt, self.deps))
        return govern_history(pending, self.settings, context=context), instructions, context

    def estimated_prompt_tokens(self, prompt: str | None = None) -> int:
        """Tokens of the next request (instructions, governed history, prompt), estimated
        and calibrated by the tokens the provider reported for the previous one."""
        return self._estimate(*self._next_request(prompt)).tokens

    def _estimate(
        self, view: list[ModelMessage], instructions: str, context: Callable[[str], str]
    ) -> TokenCount:
        estimate = estimate_tokens(view) + len(instructions) // 4
        # Calibrated by what the provider reported for the last requests (its tokenizer).
        calibration = token_calibration(self.history, self.settings, context)
        if calibration is None:
            return TokenCount(estimate, "estimated")
        scale, offset = calibration
        return TokenCount(max(0, round(scale * estimate + offset)), "calibrated")

    async def prompt_tokens(self, prompt: str | None = None) -> TokenCount:
        """Tokens of the next request: counted by the model's own tokenizer where its server
        counts them (the local model's llama.cpp, once started), else estimated and
        calibrated (``estimated_prompt_tokens``). Auto-compaction and `%history` use it."""
        view, instructions, context = self._next_request(prompt)
        counted = await self._tokenizer_count(view, instructions)
        if counted is None:
            return self._estimate(view, instructions, context)
        # What the count cannot see (tool definitions) is what the provider reported for
        # the last request beyond the count of that request.
        extra = 0
        last = _last_reported(self.history)
        if last is not None:
            at, reported = last
            sent = govern_history(self.history[:at], self.settings, context=context)
            before = await self._tokenizer_count(sent, instructions)
            extra = 0 if before is None else max(0, reported - before)
        return TokenCount(counted + extra, "tokenizer")

    async def _tokenizer_count(self, view: list[ModelMessage], instructions: str) -> int | None:
        """The prompt tokens of ``view`` with ``instructions`` by the model's own tokenizer,
        or None where no running server counts them."""
        import httpx
        from pydantic_ai.messages import InstructionPart
        from pydantic_ai.models import ModelRequestParameters

        handle = self._handle
        if handle is None or handle.local is None or not handle.local.server.running:
            return None
        parameters = ModelRequestParameters(instruction_parts=[InstructionPart(instructions)])
        try:
            usage = await handle.model.count_tokens(view, None, parameters)
        except (httpx.HTTPError, ValueError, NotImplementedError) as exc:
            log.info("the local server did not count the prompt's tokens: %s", exc)
            return None
        return usage.input_tokens

    def resume(self, session_id: str | None) -> SessionInfo:
        """Replace the conversation with a saved one (an id prefix, or None for the latest).

        Raises SessionLookupError (a LookupError) with what to type instead.
        """
        from ..store import SessionLookupError

        store = self.store
        if store is None:
            raise SessionLookupError(
                "Saving sessions is off (setting `save_sessions`), so there is nothing to resume."
            )
        if session_id:
            info = store.resolve(session_id)
        else:
            found = store.latest(
                notebook=self.deps.notebook_path,
                workspace=str(self.deps.workspace),
                exclude=self.session_id,
            )
            if found is None:
                where = (
                    f"notebook {self.deps.notebook_path}"
                    if self.deps.notebook_path
                    else f"folder {self.deps.workspace}"
                )
                raise SessionLookupError(
                    f"No earlier session of this {where} is saved. See %sessions for all."
                )
            info = found
        stored = store.load(info.id)
        self.history = stored.messages
        self.turns = stored.turns
        meta = stored.info.meta.get("compaction", {})
        self.compaction_usage = SessionUsage(
            meta.get("input_tokens", 0), meta.get("output_tokens", 0), meta.get("requests", 0)
        )
        self.deps.session_id = info.id
        self._revision = stored.info.revision
        forked_from = stored.info.meta.get("forked_from")
        self._meta_extra = {"forked_from": forked_from} if forked_from else {}
        return stored.info

    def save(
        self, *, from_message: int = 0, from_turn: int = 0, frontend: FrontendProtocol | None = None
    ) -> bool:
        """Write the conversation from those points on; never raises (a notice instead)."""
        store = self.store
        if store is None or (not self.turns and not self.history):
            return False
        usage = self.compaction_usage
        meta: dict[str, Any] = {
            "compaction": {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "requests": usage.requests,
            },
            **self._meta_extra,
        }

        def write(first_message: int, first_turn: int) -> None:
            self._revision = store.save(
                self.session_id,
                self.history,
                self.turns,
                from_message=first_message,
                from_turn=first_turn,
                notebook=self.deps.notebook_path,
                workspace=str(self.deps.workspace),
                kernel_id=self.deps.kernel_id,
                model=self.model_string,
                meta=meta,
                expect=self._revision,
            )

        try:
            try:
                write(from_message, from_turn)
            except SessionConflict:
                # Another kernel resumed this conversation too and saved first: go on as a
                # fork under a new id rather than interleave two conversations' rows.
                original = self.session_id
                self.deps.session_id = uuid.uuid4().hex
                self._revision = None
                self._meta_extra["forked_from"] = original
                meta["forked_from"] = original
                write(0, 0)
                self._notify(
                    frontend,
                    f"Another kernel also continued conversation `{original[:8]}` and saved it "
                    f"first, so this kernel's conversation goes on as a fork, "
                    f"`{self.session_id[:8]}`. Both are saved (see `%sessions`).",
                )
        except (sqlite3.Error, OSError) as exc:
            log.warning("saving session %s failed", self.session_id, exc_info=True)
            if frontend is not None and not self._store_failed:
                frontend.on_notice(
                    f"Co could not save this conversation to {store.path} ({exc}); it "
                    "continues in memory, but `%resume` will not find this turn.",
                    "warning",
                )
            self._store_failed = True
            return False
        self._store_failed = False
        notice = store.take_notice()  # a damaged store set aside for a fresh one
        if notice is not None:
            self._notify(frontend, notice)
        return True

    def _notify(self, frontend: FrontendProtocol | None, notice: str) -> None:
        """Show a warning in the cell, or at the start of the next turn without one."""
        if frontend is not None:
            frontend.on_notice(notice, "warning")
        else:
            self._pending_notices.append(notice)

    # -- compaction --------------------------------------------------------

    async def compact(self, focus: str | None = None) -> CompactReport:
        """Replace older turns with a summary; the last `compact_keep_turns` stay verbatim."""
        from ._compact import summarise

        keep = self.settings.compact_keep_turns
        split = split_for_compaction(self.history, keep)
        if split is None:
            raise CompactError(
                f"there is nothing to compact yet: the conversation has "
                f"{len(self.live_turns)} turn(s) and the last {keep} always stay as they are"
            )
        cut, folded = split
        before = (await self.prompt_tokens()).tokens
        handle, close = self._summary_model()
        try:
            window = self.context_window
            transcript = render_transcript(self.history[:cut], max_chars=window * 2)
            summary = await summarise(
                handle.model,
                transcript,
                focus=focus,
                timeout=self.settings.request_timeout,
                provider=handle.provider,
                label=handle.label,
                model_settings=handle.model_settings,
            )
        finally:
            close()
        usage = self.compaction_usage
        usage.input_tokens += summary.input_tokens
        usage.output_tokens += summary.output_tokens
        usage.requests += summary.requests
        kept = self.history[cut:]
        self.history = compacted_history(summary.text, kept)
        shift = len(self.history) - len(kept) - cut
        for turn in self.turns:
            if turn.start is not None:
                turn.start = None if turn.start < cut else turn.start + shift
        self.save()
        return CompactReport(
            folded_turns=folded,
            kept_turns=len(self.live_turns),
            tokens_before=before,
            tokens_after=(await self.prompt_tokens()).tokens,
            summary=summary.text,
        )

    def _summary_model(self) -> tuple[ModelHandle, Callable[[], None]]:
        """(handle, close) of the model that writes the summary."""
        wanted = self.settings.summarization_model
        current = self.model_string
        if not wanted or (current and parse_model_string(wanted) == parse_model_string(current)):
            _, handle = self.ensure_agent()
            return handle, lambda: None
        handle = build_model(
            self.settings, wanted, base_dir=self.deps.workspace, recorder=self.deps.recorder
        )
        return handle, handle.close

    async def _auto_compact(self, prompt: str, frontend: FrontendProtocol) -> None:
        """Compact first when the prompt would pass `auto_compact_ratio` of the window."""
        settings = self.settings
        window = self.context_window
        limit = int(settings.auto_compact_ratio * window)
        if not self.history:
            return
        estimate = (await self.prompt_tokens(prompt)).tokens
        if (
            estimate <= limit
            or split_for_compaction(self.history, settings.compact_keep_turns) is None
        ):
            return
        frontend.on_status("Compacting the conversation to fit the context window…")
        try:
            report = await self.compact()
        except (CompactError, ConfigError) as exc:
            frontend.clear_status()
            frontend.on_notice(
                f"The conversation is near the context window (~{estimate:,} of "
                f"{window:,} tokens) but Co could not compact it: {exc}. "
                "Try `%compact` or `%clear`.",
                "warning",
            )
            return
        frontend.clear_status()
        frontend.on_notice(
            f"Co compacted the conversation: it was ~{estimate:,} tokens, past "
            f"{settings.auto_compact_ratio:.0%} of the {window:,}-token "
            f"context window. {report.folded_turns} earlier turn(s) are now a summary; the last "
            f"{report.kept_turns} stay as they were (~{report.tokens_after:,} tokens now).",
            "info",
        )

    # -- turns -------------------------------------------------------------

    def check_prompt(self, prompt: str) -> str | None:
        """A readable refusal for a prompt Co will not send, or None."""
        limit = self.settings.max_prompt_chars
        if len(prompt) > limit:
            return (
                f"This cell has {len(prompt):,} characters; Co sends at most {limit:,} per prompt "
                "(setting `max_prompt_chars`). Save large text to a file in the notebook's "
                "folder and ask Co to read it instead. The conversation is unchanged."
            )
        return None

    def _report_definition_problems(self, frontend: FrontendProtocol) -> None:
        """Skill and subagent files that could not be read, once each (`%skills` lists all)."""
        from ._definitions import new_definition_problems

        problems = new_definition_problems(self.deps)
        if problems:
            lines = "\n".join(f"- `{p}`" for p in problems)
            frontend.on_notice(f"Some skill or subagent files were skipped:\n{lines}", "warning")

    async def run_prompt(
        self, prompt: str, *, cell_id: str | None, frontend: FrontendProtocol
    ) -> TurnResult | None:
        """Run one turn; re-running the last turn's cell replaces that turn."""
        refusal = self.check_prompt(prompt)
        if refusal:
            frontend.on_notice(refusal, "error")
            return None
        try:
            agent, handle = self.ensure_agent()
        except ConfigError as exc:
            frontend.on_notice(str(exc), "error")
            return None
        if not await self._prepare(handle, frontend):
            return None
        last = self.turns[-1] if self.turns else None
        if cell_id and last is not None and last.cell_id == cell_id and last.start is not None:
            # Regenerate: the last turn's cell ran again, so its turn is replaced.
            self.turns.pop()
            self.history = self.history[: last.start]
        await self._auto_compact(prompt, frontend)
        start = len(self.history)
        turn_number = len(self.turns)
        self.deps.turn_index = turn_number + 1
        if self.deps.audit is None:
            self.deps.audit = self.telemetry.audit_log()
        for problem in self.telemetry.take_problems():
            frontend.on_notice(problem, "warning")
        for notice in self._pending_notices:
            frontend.on_notice(notice, "warning")
        self._pending_notices.clear()
        self._report_definition_problems(frontend)
        await self.mcp.before_turn(lambda text: frontend.on_notice(text, "warning"))
        with self.telemetry.turn(
            session_id=self.deps.session_id,
            turn=self.deps.turn_index,
            model=handle.label,
            prompt=prompt,
        ) as span:
            result = await run_turn(
                agent,
                prompt,
                deps=self.deps,
                history=self.history,
                frontend=frontend,
                provider=handle.provider,
                model_label=handle.label,
                capabilities=self.telemetry.capabilities,
            )
            span.finish(result)
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
                )
            )
        self.save(from_message=start, from_turn=turn_number, frontend=frontend)
        return result

    def close(self) -> None:
        """Stop what the session started (model server, store, spans still to export, audit)."""
        self._drop_agent()
        if self._store is not None:
            self._store.close()
        self.telemetry.close()
        self.deps.audit = None
        for resource in self.deps.extras.values():  # tools' stores and watchers
            close = getattr(resource, "close", None)
            if callable(close):
                close()


def _default_notice(handle: ModelHandle) -> str:
    if handle.provider == "ollama":
        return (
            f"No model is configured, and an Ollama server answers at "
            f"`{(handle.base_url or '').removesuffix('/v1')}` "
            f"(`OLLAMA_HOST`): Co is using its model **{handle.label}**. Choose another "
            "with `%model`, or set `model` in settings to keep one."
        )
    name = handle.local.spec.label if handle.local is not None else handle.label
    return (
        f"No model is configured, so Co is using **{name}**, a very small local model "
        "that runs offline on this machine: expect short, simple answers and no tools. "
        "For a better assistant choose another model with `%model`, e.g. "
        "`%model ollama:qwen2.5-coder:1.5b`, `%model local:/path/to/model.gguf`, or "
        "`%model gemini:gemini-2.5-flash` with `GEMINI_API_KEY` set."
    )
