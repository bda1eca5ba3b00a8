"""Narrowing what a service answered (parsed JSON) to the shapes the tools read."""

from __future__ import annotations

from typing import Any, TypeGuard, cast

__all__ = ["as_list", "as_object", "is_list"]


def as_object(value: object) -> dict[str, Any] | None:
    """``value`` as a JSON object, or None when it is something else."""
    # Parsed JSON: an object's keys are strings, its values any JSON.
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def as_list(value: object) -> list[Any]:
    """``value`` as a JSON array; empty when it is something else."""
    return cast(list[Any], value) if isinstance(value, list) else []


def is_list(value: object) -> TypeGuard[list[Any]]:
    """Whether ``value`` is a JSON array (narrowed to one of any JSON)."""
    return isinstance(value, list)
