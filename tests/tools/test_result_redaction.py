"""ToolErrorGuard hands the model every tool result, retry prompt and failure with Co's
configured secret values replaced; code that merely looks like a secret is left alone,
and a secret added to a settings file during the session is known from the next call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelRetry, ToolFailed
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from co_kernel.config import Settings
from co_kernel.session_state import CoDeps
from co_kernel.tools._errors import ToolErrorGuard

from .conftest import ctx

KEY = "gm-configured-key-8d2e41"


def _through_guard(deps: CoDeps, outcome: Any) -> Any:
    async def handler(args: dict[str, Any]) -> Any:
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return asyncio.run(
        ToolErrorGuard().wrap_tool_execute(
            ctx(deps),
            call=ToolCallPart("t", {}),
            tool_def=ToolDefinition(name="t"),
            args={},
            handler=handler,
        )
    )


def test_results_retries_and_failures_reach_the_model_redacted(workspace):
    deps = CoDeps(Settings(gemini_api_key=KEY), "s", "k", workspace)
    code = 'api_key = os.environ["GEMINI_API_KEY"]'
    result = _through_guard(deps, {"display": f"key: {KEY}\n{code}", "lines": [KEY], "n": 1})
    assert result == {"display": f"key: [REDACTED]\n{code}", "lines": ["[REDACTED]"], "n": 1}
    with pytest.raises(ModelRetry) as retry:
        _through_guard(deps, ModelRetry(f"No such key {KEY}."))
    assert retry.value.message == "No such key [REDACTED]."
    with pytest.raises(ToolFailed) as failed:
        _through_guard(deps, ToolFailed(f"Refused {KEY}."))
    assert failed.value.message == "Refused [REDACTED]."


def test_a_secret_added_to_a_settings_file_is_redacted_from_the_next_call(workspace: Path):
    deps = CoDeps(Settings(), "s", "k", workspace)
    new_key = "added-later-secret-55c0a1"
    assert _through_guard(deps, new_key) == new_key  # not a secret yet
    (workspace / ".co").mkdir()
    (workspace / ".co" / "settings.json").write_text(json.dumps({"api_key": new_key}))
    assert _through_guard(deps, f"now {new_key}") == "now [REDACTED]"
