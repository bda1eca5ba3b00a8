"""The text tool-call recogniser on recorded and reconstructed outputs of small models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from co_kernel.models._textcalls import ScanState, TextCall, recognise_tool_calls, scan_text

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "textcalls.json").read_text(encoding="utf-8")
)["cases"]
TOOLS = ("shell", "read_file")


def _case_id(case: dict[str, Any]) -> str:
    return case.get("title") or f"smollm2 recorded: {case['prompt'][:40]}"


def _calls(segments: list[Any]) -> list[dict[str, Any]]:
    return [{"name": s.name, "arguments": s.arguments} for s in segments if isinstance(s, TextCall)]


def _text(segments: list[Any]) -> str:
    return "".join(s for s in segments if isinstance(s, str))


def _streamed(text: str, sizes: list[int], tools: tuple[str, ...] = TOOLS) -> list[Any]:
    """Feed ``text`` in chunks the way a stream does; return every segment produced."""
    state = ScanState()
    out: list[Any] = []
    end = 0
    for size in sizes:
        end = min(len(text), end + size)
        out += scan_text(text[:end], state, tools, final=False)
    out += scan_text(text, state, tools, final=True)
    return out


def _merged(segments: list[Any]) -> list[Any]:
    merged: list[Any] = []
    for s in segments:
        if isinstance(s, str) and merged and isinstance(merged[-1], str):
            merged[-1] += s
        else:
            merged.append(s)
    return merged


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{_case_id(c)}" for i, c in enumerate(CASES)])
def test_recognises_exactly_the_calls_in_each_output(case: dict[str, Any]) -> None:
    segments = recognise_tool_calls(case["text"], case["tools"])
    assert _calls(segments) == case["calls"]
    if not case["calls"]:
        assert _text(segments) == case["text"], "text without calls must come back unchanged"
    elif "text_after" in case:
        assert _text(segments) == case["text_after"]


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{_case_id(c)}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("size", [1, 3, 17])
def test_streaming_in_chunks_gives_the_same_result(case: dict[str, Any], size: int) -> None:
    text = case["text"]
    sizes = [size] * (len(text) // size + 1)
    assert _merged(_streamed(text, sizes)) == recognise_tool_calls(text, case["tools"])


def test_the_recorded_smollm2_outputs_hold_no_calls() -> None:
    # The 135M model never wrote a call even when told how: why Co offers it no tools.
    recorded = [c for c in CASES if c["source"].startswith("recorded")]
    assert len(recorded) == 10
    assert all(not c["calls"] for c in recorded)


def test_prose_before_a_call_is_released_before_the_call_completes() -> None:
    text = 'Let me check.\n```json\n{"name": "shell", "arguments": {"command": "ls"}}\n```'
    state = ScanState()
    partial = text[: text.index('"command"')]
    early = scan_text(partial, state, TOOLS, final=False)
    assert early == ["Let me check.\n"], "the prose streams; the open fence is held"
    late = scan_text(text, state, TOOLS, final=False)
    assert late == [TextCall("shell", {"command": "ls"})]


def test_a_code_fence_streams_while_it_is_still_open() -> None:
    text = "Here:\n```python\nfor i in range(3):\n    print(i)\n"
    state = ScanState()
    assert _text(scan_text(text, state, TOOLS, final=False)) == text
    assert state.in_code_fence


def test_a_partial_fence_or_tag_at_the_end_is_held() -> None:
    for text, held in (("Run this ``", "``"), ("Next <tool_ca", "<tool_ca")):
        state = ScanState()
        out = scan_text(text, state, TOOLS, final=False)
        assert _text(out) == text[: -len(held)]
        assert _text(scan_text(text, state, TOOLS, final=True)) == held


def test_only_registered_tools_are_recognised() -> None:
    text = '{"name": "shell", "arguments": {"command": "ls"}}'
    assert recognise_tool_calls(text, ()) == [text]
    assert recognise_tool_calls(text, ("read_file",)) == [text]


_ALPHABET = st.sampled_from(
    ["```", "```json\n", "\n", "{", "}", "[", "]", '"', "\\", ",", "<tool_call>", "</tool_call>",
     "<", "a", " ", '"name": "shell"', '"arguments": {}', ":", "python\n"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(_ALPHABET, max_size=30),
    sizes=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=40),
)
def test_any_text_streams_to_the_one_shot_result(pieces: list[str], sizes: list[int]) -> None:
    text = "".join(pieces)
    whole = recognise_tool_calls(text, TOOLS)
    assert _merged(_streamed(text, sizes)) == whole
    if not _calls(whole):
        assert _text(whole) == text
