"""Usage sums: per turn (from a turn's result) and per session (turns, or stored spans)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["TurnUsage", "UsageTotals", "sum_usage", "usage_from_spans"]


@dataclass(frozen=True)
class TurnUsage:
    """What one turn used."""

    turn: int
    """Turn number within the session."""
    model: str
    """provider:model that answered."""
    input_tokens: int = 0
    """Prompt tokens over the turn's requests."""
    output_tokens: int = 0
    """Completion tokens over the turn's requests."""
    requests: int = 0
    """Model requests made."""
    tool_calls: int = 0
    """Tool calls that ran."""
    duration: float = 0.0
    """Wall time in seconds."""

    @classmethod
    def from_summary(cls, turn: int, summary: Any) -> TurnUsage:
        """From a ``TurnSummary`` (the footer's data)."""
        return cls(
            turn=turn,
            model=summary.model,
            input_tokens=summary.input_tokens,
            output_tokens=summary.output_tokens,
            requests=summary.requests,
            tool_calls=int(summary.extra.get("tool_calls", 0) or 0),
            duration=summary.duration,
        )


@dataclass
class UsageTotals:
    """Sums over turns, overall and per model."""

    turns: int = 0
    """Turns counted."""
    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""
    requests: int = 0
    """Model requests."""
    tool_calls: int = 0
    """Tool calls."""
    duration: float = 0.0
    """Seconds spent in turns."""
    by_model: dict[str, UsageTotals] | None = None
    """The same sums per provider:model (None inside a per-model entry)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, usage: TurnUsage) -> None:
        self.turns += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.requests += usage.requests
        self.tool_calls += usage.tool_calls
        self.duration += usage.duration
        if self.by_model is not None:
            per = self.by_model.setdefault(usage.model, UsageTotals())
            per.add(usage)


def sum_usage(turns: Iterable[TurnUsage]) -> UsageTotals:
    """Totals of a session's turns (what `%usage` shows)."""
    totals = UsageTotals(by_model={})
    for usage in turns:
        totals.add(usage)
    return totals


def usage_from_spans(db_path: Path, session_id: str) -> UsageTotals:
    """Totals of a session from its stored spans (model requests and tool calls)."""
    from ._store import read_spans

    totals = UsageTotals(by_model={})
    spans = read_spans(db_path, session_id=session_id)
    for span in spans:
        if span.kind == "turn":
            totals.turns += 1
            totals.duration += span.duration_ms / 1000
        elif span.kind == "model":
            assert totals.by_model is not None
            per = totals.by_model.setdefault(span.model or "unknown", UsageTotals())
            for sums in (totals, per):
                sums.input_tokens += span.input_tokens or 0
                sums.output_tokens += span.output_tokens or 0
                sums.requests += 1
        elif span.kind == "tool":
            totals.tool_calls += 1
    return totals
