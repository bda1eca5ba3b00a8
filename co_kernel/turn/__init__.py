"""The turn: the session, the agent factory, the run_turn state machine, the frontend protocol."""

from __future__ import annotations

from ._agent import build_session_agent, rehearse_agent_run, session_toolsets
from ._compact import CompactError
from ._frontend import (
    ApprovalDecision,
    ApprovalRequest,
    FrontendProtocol,
    NoticeLevel,
    SubagentView,
    TodoView,
    ToolCallView,
    ToolResultView,
    TurnSummary,
)
from ._history_processors import estimate_tokens, is_summary, token_calibration
from ._recording_frontend import RecordingFrontend
from ._repair import INTERRUPTED_TOOL_RETURN
from ._run import TurnResult, run_turn
from ._session import ChatSession
from ._session_protocol import SessionProtocol
from ._session_usage import session_cost, session_tokens

__all__ = [
    "INTERRUPTED_TOOL_RETURN",
    "ApprovalDecision",
    "ApprovalRequest",
    "ChatSession",
    "CompactError",
    "FrontendProtocol",
    "NoticeLevel",
    "RecordingFrontend",
    "SessionProtocol",
    "SubagentView",
    "TodoView",
    "ToolCallView",
    "ToolResultView",
    "TurnResult",
    "TurnSummary",
    "build_session_agent",
    "estimate_tokens",
    "is_summary",
    "rehearse_agent_run",
    "run_turn",
    "session_cost",
    "session_tokens",
    "session_toolsets",
    "token_calibration",
]
