"""Bytes through Co's redactor, as a store that keeps messages serialised as JSON would."""

from __future__ import annotations

from co_kernel.telemetry import Redactor

__all__ = ["redact_bytes"]


def redact_bytes(redactor: Redactor, data: bytes) -> bytes:
    """UTF-8 bytes (e.g. messages serialised as JSON for a store), redacted."""
    text = data.decode("utf-8", errors="surrogateescape")
    cleaned = redactor.redact(text)
    return data if cleaned is text else cleaned.encode("utf-8", errors="surrogateescape")
