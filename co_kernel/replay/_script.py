"""Scripts for the scripted model server: what each model request is answered with.

A script is a list of steps, one per model request, consumed in order. It is written as a
JSON list (`.json`) or as JSON Lines (`.jsonl`, one step per line, blank lines ignored)::

    {"expect": {"last_user_contains": "weather"}, "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    {"expect": {"tool_result_contains": "sunny"}, "text": "It is sunny in Paris."}

A step is an object with these keys, all optional:

`text`
    Assistant text. Streamed in tokens of up to four characters that keep their whitespace,
    so the streamed deltas join to exactly this text.
`tool_calls`
    A list of `{"name": str, "arguments": dict | str, "id": str}`. A dict is JSON-encoded; a
    string is sent verbatim, so a script can send invalid JSON. `id` defaults to
    `call_<request>_<index>`. `decision` (approved, denied, approved all) is the person's answer
    when the call was recorded; a replay gives the same call that answer instead of asking
    (setting `replay_approvals`). `page` lists what a notebook tool asked the notebook's page
    and what the page answered when the call was recorded, in order:
    `{"op": "read", "reply": {...}}` or `{"op": "edit", "changes": [...], "reply": {...}}`
    (the `co.notebook` requests of `co_kernel.notebook`); a replay compares the edits it
    proposes with these and, with no page connected, answers from them. Streamed the OpenAI way: a delta with the index, id, type and
    name and empty arguments, then argument fragments. The finish reason is `tool_calls` when
    there are any, else `stop`.
`reasoning`
    Thinking text, streamed before everything else as `reasoning_content` deltas (the field
    DeepSeek uses, which pydantic-ai's `OpenAIChatModel` reads into a `ThinkingPart`).
`expect`
    Case-sensitive checks on the request the step answers: `last_user_is` (the whole
    message, as a recording writes it), substrings `last_user_contains`,
    `system_contains` (system and developer messages), `tool_result_contains` (the last
    `tool` message), `messages_contain` (a list; each must occur in the messages serialised
    as JSON), `tools_include` and `tools_exclude` (lists of tool names offered in `tools`).
    A mismatch is recorded in `ScriptedModelServer.errors` and answered with HTTP 409.
`usage`
    `{"prompt_tokens": int, "completion_tokens": int}`; either defaults to an estimate of
    one token per four characters of the request or the answer.
`tokens_per_second`
    Pace of this step's stream, overriding the server's default (none: as fast as possible).
`model`
    The model id to answer with; defaults to the `model` of the request.
`fault`
    A failure instead of, or part way through, the answer:
    `{"status": 429, "body": {...} | str, "headers": {"Retry-After": "2"}}` answers with that
    HTTP status (the body defaults to an OpenAI error object);
    `{"kind": "reset"}` resets the connection before any byte is sent;
    `{"kind": "drop", "after_chunks": N}` sends N stream chunks, then closes without `[DONE]`;
    `{"kind": "malformed", "after_chunks": N}` sends N chunks, then `data: {not json`;
    `{"kind": "stall", "seconds": S, "after_chunks": N}` sends the headers and N chunks, then
    waits S seconds before going on, long enough for a client's read timeout;
    `{"kind": "unfinished"}` sends the whole answer, cleanly ended, but without a finish
    reason, as a proxy that loses the last chunk does.
    A chunk is one SSE `data:` event, counting the first one that only carries the role.
`repeat`
    How many consecutive requests the step answers (default 1).
`finish_reason`
    `"length"` ends the answer as one cut off by the token limit (default: `tool_calls`
    or `stop`).

Unknown keys are rejected when the script is loaded, with the line or index of the step.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError

__all__ = (
    "DropFault",
    "Expect",
    "MalformedFault",
    "ResetFault",
    "Script",
    "ScriptSource",
    "StallFault",
    "StatusFault",
    "Step",
    "ToolCall",
    "UnfinishedFault",
    "Usage",
    "check_expect",
    "split_tokens",
    "tool_names",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolCall(_Strict):
    """A tool call the scripted model makes."""

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict[str, Any])
    """A dict is JSON-encoded; a string is sent verbatim."""
    id: str | None = None
    """Defaults to `call_<request>_<index>`, unique within a server's lifetime."""
    decision: Literal["approved", "denied", "approved all"] | None = None
    """The person's answer when the call was recorded; a replay applies it to the same call."""
    cells: list[bool] | None = None
    """Of a call touching several cells approved in part: which cells the person accepted,
    in order; a replay applies the same ones."""
    page: list[dict[str, Any]] = Field(default_factory=list[dict[str, Any]])
    """What the call asked the notebook's page and what it answered, when recorded."""

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


class Expect(_Strict):
    """Case-sensitive checks on the request a step answers (all but one are substrings)."""

    last_user_is: str | None = None
    """The last user message is exactly this."""
    last_user_contains: str | None = None
    system_contains: str | None = None
    messages_contain: list[str] = Field(default_factory=list[str])
    tool_result_contains: str | None = None
    tools_include: list[str] = Field(default_factory=list[str])
    tools_exclude: list[str] = Field(default_factory=list[str])


class Usage(_Strict):
    """Token counts to report; a missing one is estimated."""

    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)


class StatusFault(_Strict):
    """Answer with an HTTP error status instead of a completion."""

    kind: Literal["status"] = "status"
    status: int = Field(ge=100, le=599)
    body: dict[str, Any] | list[Any] | str | None = None
    """JSON body, or text sent as `text/plain`; defaults to an OpenAI error object."""
    headers: dict[str, str] = Field(default_factory=dict[str, str])


class ResetFault(_Strict):
    """Reset the TCP connection before sending any byte."""

    kind: Literal["reset"]


class DropFault(_Strict):
    """Close the connection after `after_chunks` stream chunks, without finishing the body."""

    kind: Literal["drop"]
    after_chunks: int = Field(default=0, ge=0)


class MalformedFault(_Strict):
    """Send `after_chunks` chunks, then an event whose data is not JSON, then end the stream."""

    kind: Literal["malformed"]
    after_chunks: int = Field(default=0, ge=0)


class StallFault(_Strict):
    """After the headers and `after_chunks` chunks, wait `seconds` before going on normally."""

    kind: Literal["stall"]
    seconds: float = Field(ge=0)
    after_chunks: int = Field(default=0, ge=0)


class UnfinishedFault(_Strict):
    """Send the whole answer with no finish reason (`finish_reason: null` throughout)."""

    kind: Literal["unfinished"]


def _fault_kind(value: Any) -> str | None:
    mapping = _as_mapping(value)
    kind: object = getattr(value, "kind", None) if mapping is None else mapping.get("kind")
    if kind is None and mapping is not None and "status" in mapping:
        return "status"
    return kind if isinstance(kind, str) else None


Fault = Annotated[
    Annotated[StatusFault, Tag("status")]
    | Annotated[ResetFault, Tag("reset")]
    | Annotated[DropFault, Tag("drop")]
    | Annotated[MalformedFault, Tag("malformed")]
    | Annotated[StallFault, Tag("stall")]
    | Annotated[UnfinishedFault, Tag("unfinished")],
    Discriminator(
        _fault_kind,
        custom_error_type="invalid_fault",
        custom_error_message="a fault needs 'status' or a 'kind' of reset, drop, malformed, stall or unfinished",
    ),
]


class Step(_Strict):
    """What the scripted model answers to one request (or `repeat` consecutive ones)."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list[ToolCall])
    reasoning: str | None = None
    expect: Expect | None = None
    usage: Usage | None = None
    tokens_per_second: float | None = Field(default=None, gt=0)
    model: str | None = None
    fault: Fault | None = None
    repeat: int = Field(default=1, ge=1)
    finish_reason: Literal["length"] | None = None


@dataclass(frozen=True)
class Script:
    """An ordered list of steps, with where they came from for error messages."""

    steps: tuple[Step, ...]
    """The steps, in the order requests consume them."""
    source: str = "<list>"
    """The file the steps were read from, or `<list>`."""

    @classmethod
    def coerce(cls, value: ScriptSource) -> Script:
        """Turn anything the server accepts as a script into a `Script`; a `str` is a file path."""
        if isinstance(value, Script):
            return value
        if isinstance(value, str | os.PathLike):
            return cls.from_file(value)
        return cls.from_steps(value)

    @classmethod
    def from_steps(
        cls, items: Sequence[Mapping[str, Any] | Step], *, source: str = "<list>"
    ) -> Script:
        """Validate a list of steps given as dicts or `Step`s."""
        if isinstance(items, str | bytes) or not isinstance(items, Sequence):
            raise ValueError(f"{source}: a script is a list of steps, got {type(items).__name__}")
        return cls(
            tuple(
                _parse_step(item, f"{source}: step {i + 1} (index {i})")
                for i, item in enumerate(items)
            ),
            source,
        )

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Script:
        """Read a `.json` list of steps or a `.jsonl` file with one step per line."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"cannot read script {path}: {e.strerror or e}") from e
        is_jsonl = path.suffix == ".jsonl" or (
            path.suffix != ".json" and not text.lstrip().startswith("[")
        )
        if not is_jsonl:
            try:
                items = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not valid JSON: {e}") from e
            return cls.from_steps(items, source=str(path))
        steps: list[Step] = []
        # Lines end at "\n" only: JSON keeps U+2028, U+0085 and the like raw inside strings,
        # and str.splitlines would cut a recorded answer holding one in two.
        for line_number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            where = f"{path}, line {line_number}"
            try:
                item = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: not valid JSON: {e}") from e
            steps.append(_parse_step(item, where))
        return cls(tuple(steps), str(path))

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def model_ids(self) -> list[str]:
        """The model ids the steps answer with, in order of first use."""
        return list(dict.fromkeys(step.model for step in self.steps if step.model))


ScriptSource: TypeAlias = Script | str | os.PathLike[str] | Sequence[Mapping[str, Any] | Step]
"""What a server accepts as a script: a `Script`, a path to a `.json` or `.jsonl` file, or a list of steps."""

_STEP_KEYS = ", ".join(Step.model_fields)


def _parse_step(item: object, where: str) -> Step:
    if isinstance(item, Step):
        return item
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: a step is a JSON object, got {type(item).__name__}")
    unknown = [str(key) for key in cast(Mapping[object, Any], item) if key not in Step.model_fields]
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; a step takes {_STEP_KEYS}")
    try:
        return Step.model_validate(item)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'step'}: {error['msg']}"
            for error in e.errors()
        )
        raise ValueError(f"{where}: {problems}") from None


_TOKEN = re.compile(r"\s*\S{1,4}|\s+")


def split_tokens(text: str) -> list[str]:
    """Split text into pseudo-tokens of up to four visible characters, keeping every character."""
    return _TOKEN.findall(text)


def _as_mapping(value: object) -> Mapping[str, Any] | None:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else None


def _as_list(value: object) -> list[Any]:
    if not isinstance(value, list):
        return []
    items: list[Any] = value
    return items


def _text_of(content: object) -> str:
    """The text of a chat message's `content`, a string or a list of parts."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in _as_list(content):
        if (mapping := _as_mapping(part)) is not None and isinstance(
            text := mapping.get("text"), str
        ):
            texts.append(text)
    return "\n".join(texts)


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [m for item in _as_list(body.get("messages")) if (m := _as_mapping(item)) is not None]


def _last_with_role(messages: list[Mapping[str, Any]], *roles: str) -> str:
    for message in reversed(messages):
        if message.get("role") in roles:
            return _text_of(message.get("content"))
    return ""


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """The names of the function tools a request offers."""
    names: list[str] = []
    for tool in _as_list(body.get("tools")):
        function = _as_mapping((_as_mapping(tool) or {}).get("function"))
        if function is not None and isinstance(name := function.get("name"), str):
            names.append(name)
    return names


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def check_expect(expect: Expect, body: Mapping[str, Any]) -> str | None:
    """The first way `body` fails `expect`, phrased for a test failure, or `None` if it passes."""
    messages = _messages(body)
    if expect.last_user_is is not None:
        got = _last_with_role(messages, "user")
        if got != expect.last_user_is:
            return f"expected last user message to be {_shorten(expect.last_user_is)!r}, got {_shorten(got)!r}"
    if expect.last_user_contains is not None:
        got = _last_with_role(messages, "user")
        if expect.last_user_contains not in got:
            return f"expected last user message to contain {expect.last_user_contains!r}, got {_shorten(got)!r}"
    if expect.system_contains is not None:
        got = "\n".join(
            _text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
        )
        if expect.system_contains not in got:
            return f"expected system prompt to contain {expect.system_contains!r}, got {_shorten(got)!r}"
    if expect.tool_result_contains is not None:
        got = _last_with_role(messages, "tool")
        if expect.tool_result_contains not in got:
            return f"expected last tool result to contain {expect.tool_result_contains!r}, got {_shorten(got)!r}"
    if expect.messages_contain:
        serialised = json.dumps(messages, ensure_ascii=False)
        for needle in expect.messages_contain:
            if needle not in serialised:
                return f"expected messages to contain {needle!r}, got {_shorten(serialised)!r}"
    offered = tool_names(body)
    missing = [name for name in expect.tools_include if name not in offered]
    if missing:
        return f"expected tools to include {missing!r}, got {offered!r}"
    unwanted = [name for name in expect.tools_exclude if name in offered]
    if unwanted:
        return f"expected tools to exclude {unwanted!r}, got {offered!r}"
    return None
