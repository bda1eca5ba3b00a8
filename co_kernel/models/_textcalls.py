"""Tool calls that small models write as text, recognised and split out of their answer.

Small local models (Qwen2.5-Coder 0.5B/1.5B measured with llama.cpp) rarely fill in
``tool_calls``; they write the call into their answer instead, as fenced JSON::

    ```json
    {"name": "shell", "arguments": {"command": "ls"}}
    ```

or as bare JSON, a list of such objects, ``"parameters"`` in place of ``"arguments"``,
an OpenAI-style ``{"type": "function", "function": {...}}`` or Hermes' ``<tool_call>``
tags. ``scan_text`` finds those calls for names of registered tools only and leaves
everything else as text. It is pure and resumable, so a stream can show prose as it
arrives and hold back only what may still turn out to be a call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["ScanState", "TextCall", "recognise_tool_calls", "scan_text"]

_FENCE = "```"
_TAG_OPEN = "<tool_call>"
_TAG_CLOSE = "</tool_call>"
# Fence languages a model uses for a call; any other fence is code and stays text.
_CALL_LANGUAGES = frozenset(
    {"", "json", "jsonc", "json5", "javascript", "js", "tool_call", "tool_code", "tool", "function"}
)
_NAME_KEYS = ("name", "tool", "tool_name")
_ARGS_KEYS = ("arguments", "parameters", "args", "input")
_ALLOWED_KEYS = frozenset({*_NAME_KEYS, *_ARGS_KEYS, "type", "id", "function"})
_INTERESTING = re.compile(r"```|<|[{\[]")
_JSON_TOKEN = re.compile(r'["{}\[\]\\]')
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


@dataclass(frozen=True)
class TextCall:
    """A tool call found in a model's text."""

    name: str
    """A registered tool's name."""
    arguments: dict[str, Any]
    """The call's arguments (``{}`` when the model gave none)."""


Segment = str | TextCall


@dataclass
class ScanState:
    """Where a scan of one growing text stopped; pass it back with the longer text."""

    position: int = 0
    """Characters of the text already turned into segments."""
    in_code_fence: bool = False
    """Inside a fenced block whose language is not a call's (its text streams freely)."""
    segments: list[Segment] = field(default_factory=list[Segment])
    """Everything resolved so far, in order (adjacent text merged)."""


def recognise_tool_calls(text: str, tool_names: Collection[str]) -> list[Segment]:
    """Split a complete answer into text and the tool calls written into it."""
    state = ScanState()
    scan_text(text, state, tool_names, final=True)
    return state.segments


def scan_text(
    text: str, state: ScanState, tool_names: Collection[str], *, final: bool
) -> list[Segment]:
    """Resolve as much of ``text`` past ``state.position`` as is certain; return the new segments.

    Without ``final`` a possible call (an open fence, an unbalanced ``{``, a partial
    ``<tool_call>``) stops the scan until more text arrives; with ``final`` everything is
    resolved, and what never became a call is text.
    """
    new: list[Segment] = []
    names = frozenset(tool_names)
    pos = state.position
    n = len(text)
    while pos < n:
        if state.in_code_fence:
            end = text.find(_FENCE, pos)
            if end < 0:
                stop = n if final else _safe_end(text, pos, _FENCE)
                _add_text(new, text[pos:stop])
                pos = stop
                break
            _add_text(new, text[pos : end + len(_FENCE)])
            pos = end + len(_FENCE)
            state.in_code_fence = False
            continue
        match = _INTERESTING.search(text, pos)
        if match is None:
            stop = n if final else _safe_end(text, pos, _FENCE, _TAG_OPEN)
            _add_text(new, text[pos:stop])
            pos = stop
            break
        start = match.start()
        _add_text(new, text[pos:start])
        pos = start
        token = match.group()
        if token == _FENCE:
            resolved = _fence(text, start, names, final, state)
        elif token == "<":
            resolved = _tag(text, start, names, final)
        else:
            resolved = _bare(text, start, names, final)
        if resolved is None:  # undecided: wait for more text
            break
        segments, pos = resolved
        for segment in segments:
            _add(new, segment)
    state.position = pos
    for segment in new:
        _add(state.segments, segment)
    return new


def _add(out: list[Segment], segment: Segment) -> None:
    if isinstance(segment, str):
        _add_text(out, segment)
    else:
        out.append(segment)


def _add_text(out: list[Segment], text: str) -> None:
    if not text:
        return
    if out and isinstance(out[-1], str):
        out[-1] += text
    else:
        out.append(text)


def _safe_end(text: str, pos: int, *markers: str) -> int:
    """End of the text that is certainly plain: hold back a tail that may begin a marker."""
    end = len(text)
    for marker in markers:
        for k in range(min(len(marker) - 1, end - pos), 0, -1):
            if marker.startswith(text[end - k :]):
                return end - k
    return end


Resolved = tuple[list[Segment], int] | None


def _fence(text: str, start: int, names: frozenset[str], final: bool, state: ScanState) -> Resolved:
    body_start = start + len(_FENCE)
    newline = text.find("\n", body_start)
    brace = _first_of(text, body_start, "{[")
    info_end = min(i for i in (newline, brace, len(text)) if i >= 0)
    if newline < 0 and brace < 0 and not final:
        return None  # the language is not known yet
    language = text[body_start:info_end].strip().lower()
    if language not in _CALL_LANGUAGES:
        state.in_code_fence = True
        return [text[start:info_end]], info_end
    close = text.find(_FENCE, info_end)
    if close < 0 and not final:
        return None
    body_end = close if close >= 0 else len(text)
    end = close + len(_FENCE) if close >= 0 else len(text)
    calls = _calls_in(text[info_end:body_end], names)
    if calls is None:  # a JSON (or unlabelled) block that is no call: text like any other
        return [text[start:end]], end
    return list(calls), end


def _tag(text: str, start: int, names: frozenset[str], final: bool) -> Resolved:
    rest = text[start : start + len(_TAG_OPEN)]
    if not text.startswith(_TAG_OPEN, start):
        if _TAG_OPEN.startswith(rest) and start + len(rest) == len(text) and not final:
            return None  # maybe the start of a tag
        return ["<"], start + 1
    close = text.find(_TAG_CLOSE, start)
    if close < 0 and not final:
        return None
    body_end = close if close >= 0 else len(text)
    end = close + len(_TAG_CLOSE) if close >= 0 else len(text)
    calls = _calls_in(text[start + len(_TAG_OPEN) : body_end], names)
    if calls is None:
        return [_TAG_OPEN], start + len(_TAG_OPEN)
    return list(calls), end


def _bare(text: str, start: int, names: frozenset[str], final: bool) -> Resolved:
    end = _balanced_end(text, start)
    if end is None:
        if final:
            return [text[start]], start + 1
        return None
    calls = _calls_in(text[start:end], names)
    if calls is None:
        # Not a call: the bracket is text; anything nested inside is scanned on its own.
        return [text[start]], start + 1
    return list(calls), end


def _first_of(text: str, start: int, chars: str) -> int:
    found = [i for i in (text.find(c, start) for c in chars) if i >= 0]
    return min(found) if found else -1


def _balanced_end(text: str, start: int) -> int | None:
    """Index after the bracket that closes the one at ``start`` (strings respected)."""
    depth = 0
    in_string = False
    escaped_at = -2
    for match in _JSON_TOKEN.finditer(text, start):
        char = match.group()
        i = match.start()
        if in_string:
            if char == "\\" and escaped_at != i - 1:
                escaped_at = i
            elif char == '"' and escaped_at != i - 1:
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _loads(source: str) -> JsonValue:
    source = source.strip()
    if not source:
        return None
    try:
        return json.loads(source)
    except json.JSONDecodeError:
        pass
    try:  # small models often leave a trailing comma
        return json.loads(_TRAILING_COMMA.sub(r"\1", source))
    except json.JSONDecodeError:
        return None


def _calls_in(source: str, names: frozenset[str]) -> list[TextCall] | None:
    """The calls a JSON text holds, or None when it is anything else."""
    value = _loads(source)
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    calls: list[TextCall] = []
    for item in items:
        call = _as_call(item, names)
        if call is None:
            return None
        calls.append(call)
    return calls


def _as_call(item: JsonValue, names: frozenset[str]) -> TextCall | None:
    if not isinstance(item, dict) or not set(item) <= _ALLOWED_KEYS:
        return None
    function = item.get("function")
    if isinstance(function, dict):  # OpenAI's {"type": "function", "function": {...}}
        return _as_call(function, names)
    name = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
    if not isinstance(name, str) or name not in names:
        return None
    args: JsonValue = next((item[k] for k in _ARGS_KEYS if k in item), None)
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    return TextCall(name, args)
