"""A session's conversation in the session store: saved after every turn, resumed, forked.

Each save continues from the revision this kernel last wrote or read. When another kernel
resumed the same conversation and saved first, this one goes on as a fork under a new id
instead of interleaving two conversations' rows. A store that cannot be written never
stops a turn: the conversation goes on in memory and a notice says so.
"""

from __future__ import annotations

import logging
import sqlite3
import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..exceptions import DatabaseTooNew
from ..inert import inert_code, inert_text
from ..store import SessionConflict, SessionStore, TurnRow, session_store_path
from ..telemetry import CostSum
from ._compact import SessionUsage
from ._costs import tokens_cost

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_ai.messages import ModelMessage

    from ..config import Settings
    from ..session_state import CoDeps
    from ..store import Revision, StoredSession
    from ._frontend import FrontendProtocol

__all__ = ["SessionPersistence", "TurnRecord"]

log = logging.getLogger(__name__)

TurnRecord = TurnRow
"""A turn of the conversation: prompt, cell, where it starts in the history, its usage."""


def _stored_cost(meta: dict[str, Any], settings: Settings) -> CostSum:
    """The compaction requests' cost as saved; a session saved before costs were kept is
    priced from its counts (the summary model is not kept: the session's model)."""
    try:
        return CostSum(
            Decimal(str(meta["cost"])), bool(meta["cost_unknown"]), bool(meta["cost_priced"])
        )
    except (KeyError, ArithmeticError, ValueError):
        return tokens_cost(
            meta.get("input_tokens", 0), meta.get("output_tokens", 0), settings.model, settings
        )


class SessionPersistence:
    """Saves and resumes one kernel session's conversation under ``deps.session_id``."""

    def __init__(
        self,
        deps: CoDeps,
        *,
        redact: Callable[[str], str],
        store: SessionStore | None,
        notices: list[str],
    ) -> None:
        self._deps = deps
        self._redact = redact
        self._store = store
        self._failed = False
        self._revision: Revision | None = None
        """The store write this session continues from (None: a new session)."""
        self._meta_extra: dict[str, str] = {}
        """Kept in the stored session's meta (``forked_from``)."""
        self._notices = notices
        """Where notices of saves made without a frontend (compaction) wait for the next turn."""

    @property
    def store(self) -> SessionStore | None:
        """The session store, or None when `save_sessions` is off."""
        if not self._deps.settings.save_sessions:
            return None
        if self._store is None:
            self._store = SessionStore(session_store_path(), redact=self._redact)
        return self._store

    @property
    def working(self) -> bool:
        """Whether saving is on and the last save (if any) succeeded."""
        return self.store is not None and not self._failed

    def continue_from(self, other: SessionPersistence) -> None:
        """Save where ``other`` left off (a session rebuilt around the same conversation)."""
        self._revision = other._revision
        self._meta_extra = dict(other._meta_extra)
        self._failed = other._failed

    def start_new(self) -> None:
        """The next save starts a new stored session (after ``%clear``)."""
        self._revision = None
        self._meta_extra = {}

    def load(self, session_id: str | None) -> tuple[StoredSession, SessionUsage]:
        """A saved conversation (an id prefix, or None for the latest of this notebook),
        which the next save continues; and its compaction usage.

        Raises SessionLookupError (a LookupError) with what to type instead.
        """
        from ..store import SessionLookupError

        deps = self._deps
        store = self.store
        if store is None:
            raise SessionLookupError(
                "Saving sessions is off (setting `save_sessions`), so there is nothing to resume."
            )
        if session_id:
            info = store.resolve(session_id)
        else:
            found = store.latest(
                notebook=deps.notebook_path,
                workspace=str(deps.workspace),
                exclude=deps.session_id,
            )
            if found is None:
                where = (
                    f"notebook {deps.notebook_path}"
                    if deps.notebook_path
                    else f"folder {deps.workspace}"
                )
                raise SessionLookupError(
                    f"No earlier session of this {where} is saved. See %sessions for all."
                )
            info = found
        stored = store.load(info.id)
        meta = stored.info.meta.get("compaction", {})
        usage = SessionUsage(
            meta.get("input_tokens", 0),
            meta.get("output_tokens", 0),
            meta.get("requests", 0),
            _stored_cost(meta, deps.settings),
        )
        for turn in stored.turns:
            # The store keeps counts, not costs: priced again with today's prices.
            cost = tokens_cost(turn.input_tokens, turn.output_tokens, turn.model, deps.settings)
            turn.cost, turn.cost_unknown = cost.cost, cost.unknown
        deps.session_id = info.id
        self._revision = stored.info.revision
        forked_from = stored.info.meta.get("forked_from")
        self._meta_extra = {"forked_from": forked_from} if forked_from else {}
        return stored, usage

    def save(
        self,
        history: list[ModelMessage],
        turns: list[TurnRecord],
        usage: SessionUsage,
        *,
        model: Callable[[], str | None],
        from_message: int = 0,
        from_turn: int = 0,
        frontend: FrontendProtocol | None = None,
    ) -> bool:
        """Write the conversation from those points on; never raises (a notice instead).

        ``model`` says the model in use, asked only when there is something to save.
        """
        store = self.store
        if store is None or (not turns and not history):
            return False
        deps = self._deps
        meta: dict[str, Any] = {
            "compaction": {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "requests": usage.requests,
                "cost": str(usage.cost.known),
                "cost_unknown": usage.cost.unknown,
                "cost_priced": usage.cost.priced,
            },
            **self._meta_extra,
        }

        def write(first_message: int, first_turn: int) -> None:
            self._revision = store.save(
                deps.session_id,
                history,
                turns,
                from_message=first_message,
                from_turn=first_turn,
                notebook=deps.notebook_path,
                workspace=str(deps.workspace),
                kernel_id=deps.kernel_id,
                model=model(),
                meta=meta,
                expect=self._revision,
            )

        try:
            try:
                write(from_message, from_turn)
            except SessionConflict:
                # Another kernel resumed this conversation too and saved first: go on as a
                # fork under a new id rather than interleave two conversations' rows.
                original = deps.session_id
                deps.session_id = uuid.uuid4().hex
                self._revision = None
                self._meta_extra["forked_from"] = original
                meta["forked_from"] = original
                write(0, 0)
                self._notify(
                    frontend,
                    f"Another kernel also continued conversation `{original[:8]}` and saved it "
                    f"first, so this kernel's conversation goes on as a fork, "
                    f"`{deps.session_id[:8]}`. Both are saved (see `%sessions`).",
                )
        except (sqlite3.Error, OSError, DatabaseTooNew) as exc:
            log.warning("saving session %s failed", deps.session_id, exc_info=True)
            if frontend is not None and not self._failed:
                frontend.on_notice(
                    f"Co could not save this conversation to {inert_code(store.path)} "
                    f"({inert_text(exc)}); it "
                    "continues in memory, but `%resume` will not find this turn.",
                    "warning",
                )
            self._failed = True
            return False
        self._failed = False
        notice = store.take_notice()  # a damaged store set aside for a fresh one
        if notice is not None:
            self._notify(frontend, notice)
        return True

    def _notify(self, frontend: FrontendProtocol | None, notice: str) -> None:
        """Show a warning in the cell, or at the start of the next turn without one."""
        if frontend is not None:
            frontend.on_notice(notice, "warning")
        else:
            self._notices.append(notice)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
