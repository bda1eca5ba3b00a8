"""Telemetry: OpenTelemetry spans, the audit log, redaction, rate limits and viewers.

Everything is local-first: one SQLite file, ``<data dir>/telemetry.db`` (WAL), holds the
spans (table ``spans``) and the audit log (table ``agent_actions``); spans also go to an
OTLP endpoint only when the ``otlp_endpoint`` setting names one. Nothing here imports the
OpenTelemetry SDK or pydantic-ai until a turn needs it: the names that do are loaded on
first access.

Viewers (``co-kernel tail``, ``co-kernel logs``, ``co-kernel traces``) read the same file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._audit import DECISIONS, AuditEvent, AuditLog, audit_target
from ._cost import PRICE_UNKNOWN, CostSum, UnitPrice, cost_of, format_cost, unit_price
from ._redact import REDACTED, Redactor, redact_value
from ._session_telemetry import SessionTelemetry
from ._usage import session_costs

if TYPE_CHECKING:
    from ._cli import add_telemetry_commands
    from ._limits import CoLimitExceeded, RateLimits, RequestWindow, usage_limit_message
    from ._tracing import Tracing

__all__ = [
    "DECISIONS",
    "PRICE_UNKNOWN",
    "REDACTED",
    "AuditEvent",
    "AuditLog",
    "CoLimitExceeded",
    "CostSum",
    "RateLimits",
    "Redactor",
    "RequestWindow",
    "SessionTelemetry",
    "Tracing",
    "UnitPrice",
    "add_telemetry_commands",
    "audit_target",
    "cost_of",
    "format_cost",
    "redact_value",
    "session_costs",
    "telemetry_db_path",
    "unit_price",
    "usage_limit_message",
]

_LAZY = {
    "CoLimitExceeded": "._limits",
    "RateLimits": "._limits",
    "RequestWindow": "._limits",
    "usage_limit_message": "._limits",
    "Tracing": "._tracing",
    "add_telemetry_commands": "._cli",
}


def __getattr__(name: str) -> Any:
    # The SDK and pydantic-ai load only when one of these names is used.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)


def telemetry_db_path() -> Path:
    """Where spans and audit rows live: ``<data dir>/telemetry.db``."""
    from ..config import paths

    return paths().data_dir / "telemetry.db"
