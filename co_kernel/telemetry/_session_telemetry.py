"""SessionTelemetry: what one chat session needs from telemetry, created lazily.

The redactor, the audit log, the tracer provider and the rate-limit window of a session
live here, so ``ChatSession`` asks for them in three places (agent build, turn, close)
and nothing is set up before the first turn.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..exceptions import DatabaseTooNew
from ..inert import inert_code, inert_text
from ._audit import AuditEvent, AuditLog
from ._redact import Redactor

if TYPE_CHECKING:
    from pydantic_ai.capabilities import AbstractCapability

    from ._budget import Budgets
    from ._limits import RequestWindow
    from ._tracing import Tracing, TurnSpan

__all__ = ["SessionTelemetry"]

log = logging.getLogger(__name__)


class _NoSpan:
    """Stands in for a TurnSpan when tracing is off."""

    def finish(self, result: Any) -> None:
        pass


class SessionTelemetry:
    """Redaction, audit, tracing and rate limits for one session."""

    def __init__(
        self,
        settings: Any,
        *,
        kernel_id: str,
        db_path: Path | None = None,
        settings_files: list[Path] | None = None,
        origins: dict[str, str] | None = None,
    ) -> None:
        # The session id is passed per turn: `%resume` may change it during a session.
        self.settings = settings
        self.settings_files = list(settings_files or [])
        self.kernel_id = kernel_id
        self._db_path = db_path
        self._redactor: Redactor | None = None
        self._audit: AuditLog | None = None
        self._tracing: Tracing | None = None
        self._window: RequestWindow | None = None
        self._broken = False
        self.problems: list[str] = []
        """Set-up failures to show in the next cell (telemetry never stops a turn)."""
        self.origins = origins if origins is not None else {}
        """Setting -> the layer that set it (the budgets name it); `%budget` updates it."""
        self._budgets: Budgets | None = None
        self.budget_warnings: list[str] = []
        """80 % warnings of a day's or month's budget, shown when the turn ends."""

    @property
    def db_path(self) -> Path:
        if self._db_path is None:
            from . import telemetry_db_path

            self._db_path = telemetry_db_path()
        return self._db_path

    @property
    def redactor(self) -> Redactor:
        """Secrets of the settings and the environment, read once per session."""
        if self._redactor is None:
            self._redactor = Redactor.from_settings(self.settings, files=self.settings_files)
        return self._redactor

    def redact(self, text: str) -> str:
        return self.redactor.redact(text)

    @property
    def tracing(self) -> Tracing | None:
        """The session's tracer provider, set up on first use; None when `tracing` is off."""
        if self._tracing is None and self.settings.tracing and not self._broken:
            from .. import __version__
            from ._tracing import Tracing

            try:
                self._tracing = Tracing(
                    self.db_path,
                    self.redactor,
                    include_content=self.settings.trace_content,
                    otlp_endpoint=self.settings.otlp_endpoint,
                    batch_delay=self.settings.trace_batch_delay,
                    retention_days=self.settings.trace_retention_days,
                    service_version=__version__,
                )
            except (OSError, sqlite3.Error, DatabaseTooNew) as exc:
                self._fail(exc)
        return self._tracing

    def audit_log(self) -> AuditLog | None:
        """The audit log, redacting, whose rows also become events on the current span.

        None when the database cannot be written (the turn still runs; the person is told).
        """
        if self._audit is None and not self._broken:
            try:
                self._audit = AuditLog(self.db_path, redact=self.redact)
            except (OSError, sqlite3.Error, DatabaseTooNew) as exc:
                self._fail(exc)
                return None
            tracing = self.tracing
            if tracing is not None:
                self._audit.listeners.append(tracing.record_decision)
        return self._audit

    def _fail(self, exc: BaseException) -> None:
        self._broken = True
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        self.problems.append(
            f"Telemetry is off for this session: cannot write {inert_code(self.db_path)} "
            f"({inert_text(reason)}). "
            "Turns run as usual; no spans or audit rows are recorded. Check the data "
            "directory (`CO_HOME`), or set `tracing` to false to silence this."
        )

    def take_problems(self) -> list[str]:
        """Problems not yet shown to the person (each is shown once)."""
        problems, self.problems = self.problems, []
        return problems

    def capabilities(self) -> list[AbstractCapability[Any]]:
        """Capabilities for the session's agent: instrumentation and rate limits."""
        caps: list[AbstractCapability[Any]] = []
        tracing = self.tracing
        if tracing is not None:
            caps.append(tracing.instrumentation())
        settings = self.settings
        from ._limits import RateLimits, RequestWindow

        if settings.max_requests_per_hour is not None and self._window is None:
            self._window = RequestWindow(settings.max_requests_per_hour)
        # Always there: every request's spending is recorded, and `%budget` may set a
        # budget after the agent was built.
        caps.append(
            RateLimits(
                window=self._window,
                max_tokens_per_turn=settings.max_tokens_per_turn,
                on_refused=self._audit_refusal,
                budgets=self.budgets,
            )
        )
        return caps

    @property
    def budgets(self) -> Budgets:
        """The session's budgets and spend store (opened on first use)."""
        if self._budgets is None:
            from ._budget import Budgets
            from ._spend import spend_store_path

            path = spend_store_path(self.settings)
            budgets = Budgets(path, self.origins)
            budgets.shared = self.settings.spend_store is not None
            budgets.on_warning = self.budget_warnings.append
            if self.settings.otlp_endpoint:
                from .. import __version__
                from ._metrics import SpendMetrics

                budgets.metrics = SpendMetrics(
                    self.settings.otlp_endpoint, service_version=__version__
                )
            try:
                budgets.store  # noqa: B018 - opened now, so a broken file is told at once
            except (OSError, sqlite3.Error, DatabaseTooNew) as exc:
                # Told once; each request tries again, and with a budget set none is sent
                # unchecked (``Budgets.admit``).
                reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
                self.problems.append(
                    f"Spending cannot be recorded: cannot open {inert_code(path)} "
                    f"({inert_text(reason)}); with a budget set, no request is sent. Check "
                    "`spend_store` or the data directory (`CO_HOME`)."
                )
            self._budgets = budgets
        return self._budgets

    def take_budget_warnings(self) -> list[str]:
        """Budget warnings not yet shown (each is shown once)."""
        warnings = list(self.budget_warnings)
        self.budget_warnings.clear()
        return warnings

    def _audit_refusal(self, limit: str, message: str, deps: Any) -> None:
        audit = self.audit_log()
        if audit is None:
            return
        audit.record(
            AuditEvent(
                session_id=deps.session_id,
                turn=deps.turn_index,
                tool="model_request",
                action="request",
                target=limit,
                decision="rate-limited",
                status="refused",
                detail=message,
            )
        )

    @contextmanager
    def turn(
        self,
        *,
        session_id: str,
        turn: int,
        model: str,
        prompt: str,
        notebook: str | None = None,
    ) -> Iterator[TurnSpan | _NoSpan]:
        """The span of one turn, or a stand-in when tracing is off.

        ``notebook``: the session's notebook as the server named it, None in a console.
        """
        audit = self.audit_log()
        if audit is not None:
            # The activity panel counts turns from here, those without tool calls too, and
            # names the session's notebook and watches its kernel process from here.
            try:
                audit.record_turn(session_id, turn)
                audit.record_session(session_id, notebook, os.getpid())
            except sqlite3.Error as exc:
                log.warning("turn not noted in the audit log: %s", exc)
        tracing = self.tracing
        if tracing is None:
            yield _NoSpan()
            return
        with tracing.turn_span(
            session_id=session_id,
            turn=turn,
            kernel_id=self.kernel_id,
            model=model,
            prompt=prompt,
        ) as span:
            yield span

    def flush(self, timeout: float = 10.0) -> None:
        if self._tracing is not None:
            self._tracing.flush(timeout)

    def close(self) -> None:
        """Export what is pending and close the files."""
        if self._tracing is not None:
            self._tracing.shutdown()
            self._tracing = None
        if self._audit is not None:
            self._audit.close()
            self._audit = None
        if self._budgets is not None:
            if self._budgets.metrics is not None:
                self._budgets.metrics.shutdown()
            self._budgets.close()
            self._budgets = None
