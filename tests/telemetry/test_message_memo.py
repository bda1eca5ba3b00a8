"""Co's instrumentation settings convert each message to its OTel form once, and what they
hand out is exactly what pydantic-ai's own settings would have."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.instrumented import InstrumentationSettings

from co_kernel.telemetry._instrumentation import CoInstrumentationSettings

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


def _conversation() -> list[ModelMessage]:
    """Two turns with every kind of part a Co conversation holds."""
    return [
        ModelRequest(
            parts=[
                SystemPromptPart("You are Co."),
                SystemPromptPart("Only for this request.", scope="request"),
                UserPromptPart(
                    ["Describe this", BinaryContent(b"\x89PNG", media_type="image/png")]
                ),
            ]
        ),
        ModelResponse(
            parts=[
                ThinkingPart("Look at the files first."),
                TextPart("Reading."),
                ToolCallPart("read_file", {"path": "a.txt"}, tool_call_id="c1"),
                ToolCallPart("list_files", '{"glob": "*.txt"}', tool_call_id="c2"),
                NativeToolCallPart("mcp_server:abc", {"q": 1}, tool_call_id="n1"),
                NativeToolReturnPart("mcp_server:abc", {"ok": True}, tool_call_id="n1"),
            ],
            model_name="scripted",
            timestamp=NOW,
            finish_reason="tool_call",
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("read_file", {"text": "the fox"}, tool_call_id="c1"),
                ToolReturnPart("list_files", "Unknown glob.", tool_call_id="c2", outcome="retried"),
            ]
        ),
        ModelRequest(
            parts=[
                # Plain data, nested (tuples become arrays either way).
                ToolReturnPart(
                    "search",
                    {"hits": [{"path": "a.txt", "lines": (1, 2)}], "more": False, "n": 1.5},
                    tool_call_id="c3",
                ),
                # A file inside a result: left out, as pydantic-ai leaves it out.
                ToolReturnPart(
                    "read_image",
                    {"image": BinaryContent(b"\x89PNG", media_type="image/png"), "n": 1},
                    tool_call_id="c4",
                ),
            ]
        ),
        ModelResponse(parts=[TextPart("The fox.")], model_name="scripted", timestamp=NOW),
        ModelRequest(parts=[UserPromptPart("And now?")]),
    ]


def _pair(**kwargs: object) -> tuple[InstrumentationSettings, CoInstrumentationSettings]:
    return InstrumentationSettings(**kwargs), CoInstrumentationSettings(**kwargs)  # type: ignore[arg-type]


def test_the_otel_form_is_pydantic_ais_for_every_kind_of_part() -> None:
    for kwargs in ({}, {"include_content": False}, {"include_binary_content": False}):
        plain, co = _pair(**kwargs)
        messages = _conversation()
        for mcp in (frozenset(), frozenset({"abc"})):
            expected = plain.messages_to_otel_messages(messages, mcp_url_ids=mcp)
            # Twice: the second call is answered from the memo.
            assert co.messages_to_otel_messages(messages, mcp_url_ids=mcp) == expected
            assert co.messages_to_otel_messages(messages, mcp_url_ids=mcp) == expected
        # The MCP server's name is withheld only when asked to, memo or not.
        assert "mcp_server:[REDACTED]" in json.dumps(
            co.messages_to_otel_messages(messages, mcp_url_ids=frozenset({"abc"}))
        )
        assert "mcp_server:[REDACTED]" not in json.dumps(co.messages_to_otel_messages(messages))
        # The image's data ("\x89PNG" in base64) is there only when binary content is kept.
        data = json.dumps(co.messages_to_otel_messages(messages))
        kept = kwargs.get("include_binary_content", True) and kwargs.get("include_content", True)
        assert ("iVBORw" in data) is kept


def test_the_span_attributes_built_from_them_are_pydantic_ais() -> None:
    plain, co = _pair()
    messages = _conversation()
    # The input messages of a later request: the request-scoped system prompt of the first
    # request is marked as not visible, on a copy of what the memo holds.
    for start in (0, 4, 4):
        expected = plain._span_input_messages(
            messages, mcp_url_ids=frozenset(), current_request_start=start
        )
        got = co._span_input_messages(
            messages, mcp_url_ids=frozenset(), current_request_start=start
        )
        assert got == expected
    assert any(
        part.get("visible") is False
        for message in co._span_input_messages(
            messages, mcp_url_ids=frozenset(), current_request_start=4
        )
        for part in message["parts"]
    )


def test_the_marks_pydantic_ai_makes_do_not_reach_the_memo() -> None:
    plain, co = _pair()
    messages = _conversation()
    pristine = plain.messages_to_otel_messages(messages)
    # Input messages of a later request: the first request's request-scoped system prompt
    # is marked, in place, on what the settings handed out.
    marked = co._span_input_messages(messages, mcp_url_ids=frozenset(), current_request_start=4)
    assert '"visible": false' in json.dumps(marked)
    assert co.messages_to_otel_messages(messages) == pristine
    assert '"visible"' not in json.dumps(co.messages_to_otel_messages(messages))


def test_a_message_given_new_parts_is_converted_again() -> None:
    plain, co = _pair()
    messages = _conversation()
    co.messages_to_otel_messages(messages)
    # Replacing `parts` is how pydantic-ai says a message changed.
    messages[4].parts = [TextPart("A different answer.")]
    assert co.messages_to_otel_messages(messages) == plain.messages_to_otel_messages(messages)
    assert "A different answer." in json.dumps(co.messages_to_otel_messages(messages))


def test_the_memo_keeps_only_the_newest_messages() -> None:
    co = CoInstrumentationSettings(memo_messages=3)
    plain = InstrumentationSettings()
    messages = [ModelRequest(parts=[UserPromptPart(f"prompt {i}")]) for i in range(10)]
    for message in messages:
        co.messages_to_otel_messages([message])
    assert len(co._memo) == 3
    # An evicted message is converted again, correctly.
    assert co.messages_to_otel_messages(messages[:2]) == plain.messages_to_otel_messages(
        messages[:2]
    )
    assert len(co._memo) == 3
