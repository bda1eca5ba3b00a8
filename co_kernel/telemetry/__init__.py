"""Telemetry: the audit log of agent actions (and, with the observability work, spans).

Everything is local-first: SQLite files under the user data directory.
"""

from __future__ import annotations

from pathlib import Path

from ._audit import DECISIONS, AuditEvent, AuditLog, audit_target

__all__ = ["DECISIONS", "AuditEvent", "AuditLog", "audit_target", "telemetry_db_path"]


def telemetry_db_path() -> Path:
    """Where spans and audit rows live: ``<data dir>/telemetry.db``."""
    from ..config import paths

    return paths().data_dir / "telemetry.db"
