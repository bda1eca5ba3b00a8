"""A conversation's tokens and their cost, as the status bar, `%status` and `%usage` count them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..telemetry import CostSum

if TYPE_CHECKING:
    from ._session_protocol import SessionProtocol

__all__ = ["session_cost", "session_tokens"]


def session_tokens(session: SessionProtocol) -> tuple[int, int]:
    """Input and output tokens of the conversation, counted the way ``%usage`` counts them.

    Each turn's usage plus the compaction requests; a turn replaced by re-running its cell
    does not count, and ``%resume`` brings a conversation's turns back with their usage.
    """
    extra = session.compaction_usage
    turns = session.turns
    return (
        sum(t.input_tokens for t in turns) + extra.input_tokens,
        sum(t.output_tokens for t in turns) + extra.output_tokens,
    )


def session_cost(session: SessionProtocol) -> CostSum:
    """What the conversation's tokens cost, counted as ``session_tokens`` counts them."""
    total = session.compaction_usage.cost
    for turn in session.turns:
        total += CostSum.of(turn.cost, turn.cost_unknown)
    return total
