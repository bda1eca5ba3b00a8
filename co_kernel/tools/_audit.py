"""Audit rows for guarded accesses (scope guard, SSRF guard), beside the per-call rows
that ``run_turn`` writes."""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..session_state import CoDeps

__all__ = ["record_access"]

log = logging.getLogger(__name__)


def record_access(
    deps: CoDeps,
    *,
    tool: str,
    action: str,
    target: str,
    decision: str,
    detail: str | None = None,
) -> None:
    """Record one guard decision: ``auto`` (allowed), ``scope-refused`` or ``policy-denied``."""
    audit = deps.audit
    if audit is None:
        return
    from ..telemetry import AuditEvent

    status = "ok" if decision == "auto" else "refused"
    try:
        audit.record(
            AuditEvent(
                session_id=deps.session_id,
                turn=deps.turn_index,
                tool=tool,
                action=action,
                target=target[:500],
                decision=decision,
                status=status,
                detail=detail,
            )
        )
    except sqlite3.Error as exc:  # a locked or broken log must not take the tool down
        log.warning("audit row not written: %s", exc)
