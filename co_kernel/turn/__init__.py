"""The turn: agent factory, deps, providers, the run_turn state machine."""

from __future__ import annotations

from ._agent import SessionAgent, build_session_agent, session_toolsets
from ._approval import is_safe_command
from ._frontend import (
    ApprovalDecision,
    ApprovalRequest,
    FrontendProtocol,
    ToolCallView,
    ToolResultView,
    TurnSummary,
)
from ._protocol import SessionProtocol
from ._providers import PROVIDERS, ModelHandle, build_model, parse_model_string
from ._recording import RecordingFrontend
from ._repair import INTERRUPTED_TOOL_RETURN, patch_dangling_tool_calls
from ._run import TurnResult, run_turn
from ._session import ChatSession, TurnRecord

__all__ = [
    "INTERRUPTED_TOOL_RETURN",
    "PROVIDERS",
    "ApprovalDecision",
    "ApprovalRequest",
    "ChatSession",
    "FrontendProtocol",
    "ModelHandle",
    "RecordingFrontend",
    "SessionAgent",
    "SessionProtocol",
    "ToolCallView",
    "ToolResultView",
    "TurnRecord",
    "TurnResult",
    "TurnSummary",
    "build_model",
    "build_session_agent",
    "is_safe_command",
    "parse_model_string",
    "patch_dangling_tool_calls",
    "run_turn",
    "session_toolsets",
]
