"""History governance: what of the conversation the model sees.

The processors are pure functions from a valid history to a valid history: every tool
call keeps its answer, and the order of what is kept never changes. ``govern_history``
applies them in the order that keeps each one cheap on a long session: the window first
(it reads backwards only as far as it keeps), then the trimming of old tool outputs and
runaway answers on what is left, and last the images of older turns, which are sent as
their one-line description instead of again as images. ``GovernHistory`` (in ``_govern.py``) runs them before
every model request.

They move in steps, so that consecutive requests share their whole earlier prefix and a
provider's prompt cache (llama.cpp's, Anthropic's, OpenAI's) is reused. Dropping one old
turn per new turn would start every request with a different message; instead, when the
window is exceeded it cuts back to half of it, and cuts again only when it is exceeded
once more. Tool outputs are trimmed at the same moments: "recent" is the second half of
the window as last cut, and a message is trimmed once, when it leaves it.

A *turn* starts at a request carrying a user prompt with no tool call open across it, so
cutting the history there never separates a call from its return.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeGuard, cast

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ToolCallPart

    from ..config import Settings

__all__ = [
    "CONTEXT_PREFIX",
    "IMAGE_BYTES",
    "IMAGE_TURNS",
    "OLD_IMAGE",
    "RUNAWAY_MARKER",
    "SUMMARY_PREFIX",
    "TRIM_MARKER",
    "WINDOW_MARKER",
    "GovernedViews",
    "cut_runaway_answers",
    "describe_old_images",
    "estimate_tokens",
    "govern_history",
    "is_summary",
    "token_calibration",
    "truncate_tool_returns",
    "turn_starts",
]

TRIM_MARKER = "\n[Co trimmed {n:,} more characters of this old tool output]"
"""Appended to a trimmed tool output; the model learns that the rest exists."""
_TRIMMED = re.compile(r"\n\[Co trimmed [\d,]+ more characters of this old tool output\]$")

WINDOW_MARKER = (
    "[Co: {n:,} earlier messages of this conversation are not shown to keep it within "
    "the history window.]"
)
"""Put before the first kept prompt when the window drops turns."""

SUMMARY_PREFIX = "[Co: summary of the earlier conversation]\n"
"""Starts the user prompt that carries a compaction summary; the window always keeps it."""

_CHARS_PER_TOKEN = 4


class GovernedViews:
    """The messages governance rebuilt, kept so the same input gives the same objects.

    Governance runs before every model request on the whole conversation, and a trimmed
    tool output or the window's marked first prompt is a new message each time. Whatever
    keys on message identity then sees a changed message on every request: with tracing
    on, pydantic-ai's instrumentation converts and serializes each of them again for every
    request span (a cost growing with the number of trimmed outputs in the window). Handed
    to the processors, this keeps each rebuilt message while its source message, the
    source's ``parts`` list and the rebuild's parameters are the same (Co never edits a
    message in place; a changed message is a new one), so an unchanged history yields the
    very same objects. ``govern_history`` keeps only what its last call used: a message
    that left the window (or a cleared or compacted conversation) is let go.
    """

    def __init__(self) -> None:
        self._views: dict[tuple[int, str], tuple[Any, Any, object, Any]] = {}
        self._used: dict[tuple[int, str], tuple[Any, Any, object, Any]] | None = None

    @contextmanager
    def one_pass(self) -> Generator[None]:
        """Keep, from here on, only the views used inside this block."""
        self._used = {}
        try:
            yield
            self._views = self._used
        finally:
            self._used = None

    def view(self, source: Any, kind: str, key: object, build: Callable[[], Any]) -> Any:
        """The ``kind`` view of ``source`` for ``key``: the one kept, or ``build()`` kept now."""
        slot = (id(source), kind)
        entry = self._views.get(slot)
        if not (
            entry is not None
            and entry[0] is source
            and entry[1] is source.parts
            and entry[2] == key
        ):
            # The source is held, so its id is not reused while the entry lives.
            entry = (source, source.parts, key, build())
            self._views[slot] = entry
        if self._used is not None:
            self._used[slot] = entry
        return entry[3]


def _is_call(part: object) -> TypeGuard[ToolCallPart]:
    from pydantic_ai.messages import ToolCallPart

    return isinstance(part, ToolCallPart)


def _answer_id(part: Any) -> str | None:
    """The call id a request part answers, or None."""
    from pydantic_ai.messages import ToolReturnPart

    # A retry that answers a call is that call's ToolReturnPart (outcome "retried").
    if isinstance(part, ToolReturnPart):
        return part.tool_call_id
    return None


def _has_prompt(message: Any) -> bool:
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    return isinstance(message, ModelRequest) and any(
        isinstance(p, UserPromptPart) for p in message.parts
    )


def is_summary(message: ModelMessage) -> bool:
    """Whether a message is the prompt that carries a compaction summary."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    if not isinstance(message, ModelRequest) or not message.parts:
        return False
    first = message.parts[0]
    return (
        isinstance(first, UserPromptPart)
        and isinstance(first.content, str)
        and first.content.startswith(SUMMARY_PREFIX)
    )


def turn_starts(messages: Sequence[ModelMessage]) -> list[int]:
    """Indices where a turn starts: a prompt request with no tool call open across it."""
    from pydantic_ai.messages import ModelRequest

    starts: list[int] = []
    open_calls: set[str] = set()
    for i, msg in enumerate(messages):
        if isinstance(msg, ModelRequest):
            if not open_calls and _has_prompt(msg):
                starts.append(i)
            for part in msg.parts:
                call_id = _answer_id(part)
                if call_id is not None:
                    open_calls.discard(call_id)
        else:
            open_calls.update(c.tool_call_id for c in msg.parts if _is_call(c))
    return starts


def _last_turn_start(messages: Sequence[ModelMessage]) -> int:
    """Start of the newest turn, found by reading backwards (cheap on long histories)."""
    from pydantic_ai.messages import ModelResponse

    answered: set[str] = set()  # returns seen whose call lies further back
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if isinstance(msg, ModelResponse):
            for reply in msg.parts:
                if _is_call(reply):
                    answered.discard(reply.tool_call_id)
        else:
            for part in msg.parts:
                call_id = _answer_id(part)
                if call_id is not None:
                    answered.add(call_id)
            if not answered and _has_prompt(msg):
                return i
    return 0


def _head(messages: Sequence[ModelMessage]) -> int:
    """How many messages a compaction summary at the start takes (0, 1 or 2)."""
    from pydantic_ai.messages import ModelResponse

    if not messages or not is_summary(messages[0]):
        return 0
    return 2 if len(messages) > 1 and isinstance(messages[1], ModelResponse) else 1


def _steps(length: int, head: int, max_messages: int) -> tuple[int, int]:
    """(step, epoch): half the window, and how many steps the window has moved by.

    The epoch is the smallest number of steps to drop for the rest to fit the window;
    it is 0 or less while the conversation fits, and grows by one every ``step`` messages.
    """
    budget = max_messages - head
    step = max(1, budget // 2)
    return step, -(-(length - head - budget) // step)  # ceiling division


def _turn_starts_back(messages: Sequence[ModelMessage], head: int) -> Iterator[int]:
    """Turn starts after ``head``, newest first, read backwards (it costs what is read).

    A cut before message i is safe when every return at or after i answers a call at or
    after i, and message i starts a prompt.
    """
    from pydantic_ai.messages import ModelResponse

    answered: set[str] = set()
    for i in range(len(messages) - 1, head - 1, -1):
        msg = messages[i]
        if isinstance(msg, ModelResponse):
            for reply in msg.parts:
                if _is_call(reply):
                    answered.discard(reply.tool_call_id)
            continue
        for part in msg.parts:
            call_id = _answer_id(part)
            if call_id is not None:
                answered.add(call_id)
        if not answered and _has_prompt(msg):
            yield i


def _lines(messages: Sequence[ModelMessage], max_messages: int) -> tuple[int, int, int]:
    """(head, cut, recent): the window keeps what is before ``head`` (a summary) and from
    ``cut`` on; tool outputs before ``recent`` are trimmed.

    Both move once per step: ``cut`` to the first turn start at or after the epoch's line
    (the newest turn's start if none is), ``recent`` to the last turn start at or before
    the next line, so a turn running across that line stays whole until the next step.
    The history has grown past that line by then, so neither moves within an epoch.
    """
    head = _head(messages)
    step, epoch = _steps(len(messages), head, max_messages)
    if epoch < 0:
        return head, head, head
    line = head + epoch * step
    exceeded = len(messages) > max_messages
    cut: int | None = None
    recent: int | None = None
    for start in _turn_starts_back(messages, head):
        if recent is None and start <= line + step:
            recent = start
        if exceeded and (cut is None or start >= line):
            cut = start
        if start < line and recent is not None:
            break
    cut = head if cut is None else cut
    return head, cut, max(cut, head if recent is None else recent)


def truncate_tool_returns(
    messages: Sequence[ModelMessage],
    trim_chars: int,
    views: GovernedViews | None = None,
    before: int | None = None,
) -> list[ModelMessage]:
    """Trim tool outputs before message ``before`` (default: the last turn) to ``trim_chars``.

    A trimmed output ends with a marker. Messages that need no change are passed through
    as the same objects; a trimmed one is a new message with new parts, so the session's
    own history is never altered (with ``views``, the one built for that message before).
    """
    from pydantic_ai.messages import ModelRequest

    out = list(messages)
    for i in range(_last_turn_start(messages) if before is None else before):
        msg = out[i]
        if not isinstance(msg, ModelRequest):
            continue
        if views is None:
            out[i] = _trimmed(msg, trim_chars)
        else:
            # A kept view skips reading the parts again (long outputs are searched for
            # the marker); one that needs no trimming is the message itself.
            out[i] = views.view(msg, "trimmed", trim_chars, lambda m=msg: _trimmed(m, trim_chars))
    return out


def _trimmed(msg: Any, trim_chars: int) -> Any:
    """``msg`` with its long tool outputs trimmed, or ``msg`` itself when none is."""
    from pydantic_ai.messages import ToolReturnPart

    new_parts: list[Any] | None = None
    for j, part in enumerate(msg.parts):
        if not isinstance(part, ToolReturnPart):
            continue
        content = part.content
        if isinstance(content, str):
            text = content
        elif part.files:  # images and documents are not text to cut
            continue
        else:
            text = part.model_response_str()
        if len(text) <= trim_chars or _TRIMMED.search(text):
            continue
        if new_parts is None:
            new_parts = list(msg.parts)
        trimmed = text[:trim_chars] + TRIM_MARKER.format(n=len(text) - trim_chars)
        # The typed subclasses narrow `content`; a trimmed output is plain text.
        new_parts[j] = dataclasses.replace(cast(Any, part), content=trimmed)
    if new_parts is None:
        return msg
    return dataclasses.replace(msg, parts=new_parts)


def _windowed(
    messages: Sequence[ModelMessage], head: int, cut: int, views: GovernedViews | None
) -> list[ModelMessage]:
    """The messages before ``head`` and from ``cut`` on, the first kept prompt marked."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    if cut <= head:
        return list(messages)
    dropped = cut - head
    first = messages[cut]
    assert isinstance(first, ModelRequest)

    def mark() -> ModelMessage:
        note = UserPromptPart(WINDOW_MARKER.format(n=dropped))
        return dataclasses.replace(first, parts=[note, *first.parts])

    marked = mark() if views is None else views.view(first, "window", dropped, mark)
    return [*messages[:head], marked, *messages[cut + 1 :]]


RUNAWAY_MARKER = (
    "\n[Co cut this answer here: it reached the length limit repeating itself. The cell "
    "shows all of it; {n:,} more characters are left out of the conversation.]"
)
"""Ends a runaway answer as the model is sent it later."""
_LOOP_KEPT = 200
"""Characters of the loop itself kept, so the model sees what went wrong."""
_LOOP_RATIO = 0.12
"""Compressed size over size below which text is a loop (prose is about 0.4)."""


def _loop_start(text: str) -> int | None:
    """Where ``text`` starts repeating itself to its end, to a block; None if it does not."""
    import zlib

    block = _LOOP_KEPT
    if len(text) < 3 * block:
        return None
    for start in range(0, len(text) - 2 * block, block):
        tail = text[start:].encode()
        if len(zlib.compress(tail)) < _LOOP_RATIO * len(tail):
            return start
    return None


def _tamed(msg: Any) -> Any:
    """A response cut off by the length limit while looping, with the loop cut; else itself."""
    from pydantic_ai.messages import TextPart

    new_parts: list[Any] | None = None
    for j, part in enumerate(msg.parts):
        if not isinstance(part, TextPart):
            continue
        start = _loop_start(part.content)
        if start is None:
            continue
        keep = start + _LOOP_KEPT
        if new_parts is None:
            new_parts = list(msg.parts)
        text = part.content[:keep] + RUNAWAY_MARKER.format(n=len(part.content) - keep)
        new_parts[j] = dataclasses.replace(part, content=text)
    if new_parts is None:
        return msg
    return dataclasses.replace(msg, parts=new_parts)


def cut_runaway_answers(
    messages: Sequence[ModelMessage], views: GovernedViews | None = None
) -> list[ModelMessage]:
    """Answers that hit the length limit repeating themselves, cut where the loop starts.

    Such an answer ("h-h-h-…" to the token cap) would otherwise ride in every later
    request; the session keeps it whole, and the cell showed it whole.
    """
    from pydantic_ai.messages import ModelResponse

    out = list(messages)
    for i, msg in enumerate(out):
        if isinstance(msg, ModelResponse) and msg.finish_reason == "length":
            out[i] = (
                _tamed(msg)
                if views is None
                else views.view(msg, "runaway", None, lambda m=msg: _tamed(m))
            )
    return out


IMAGE_TURNS = 2
"""Turns whose images are sent with every request: the current one and the one before."""

IMAGE_BYTES = 600_000
"""The most image bytes sent in one request, newest first: four images at the largest
size one may have (``co_kernel.notebook.MAX_BYTES``)."""

OLD_IMAGE = "[Co: {description}, shown earlier; not sent again]"
"""What an image is sent as once it is not sent as an image any more."""


def _images(msg: Any) -> list[tuple[int, int, Any]]:
    """(part, item, image) of every image a request carries as bytes: in a tool's output
    (run_python's figures, read_file of a PNG) or with a prompt (``@fig``)."""
    from pydantic_ai.messages import BinaryContent, ToolReturnPart, UserPromptPart

    found: list[tuple[int, int, Any]] = []
    for j, part in enumerate(msg.parts):
        if isinstance(part, ToolReturnPart):
            content: Any = part.content
            items: list[Any] = cast(list[Any], content) if isinstance(content, list) else [content]
        elif isinstance(part, UserPromptPart) and not isinstance(part.content, str):
            items = list(part.content)
        else:
            continue
        for k, item in enumerate(items):
            if isinstance(item, BinaryContent) and item.is_image:
                found.append((j, k, item))
    return found


def _image_line(image: Any) -> str:
    """One line for an image: "PNG image 640x480, 45 KB" (its size when it can be read)."""
    kind = str(image.media_type).removeprefix("image/").upper()
    size = f"{len(image.data) / 1000:.0f} KB"
    try:
        import io

        from PIL import Image

        with Image.open(io.BytesIO(image.data)) as img:
            return f"{kind} image {img.width}x{img.height}, {size}"
    except Exception:  # not readable: its type and size still say what it was
        return f"{kind} image, {size}"


def _described(msg: Any, drop: frozenset[tuple[int, int]]) -> Any:
    """``msg`` with the images at ``drop`` (part, item) replaced by their line."""
    from pydantic_ai.messages import ToolReturnPart

    parts = list(msg.parts)
    for j in sorted({j for j, _ in drop}):
        part = parts[j]
        kept: Any = part.content  # a tool's output or a prompt's items
        single = not isinstance(kept, list | tuple)
        items: list[Any] = [kept] if single else list(cast(Sequence[Any], kept))
        for k in [k for jj, k in drop if jj == j]:
            items[k] = OLD_IMAGE.format(description=_image_line(items[k]))
        content: Any = items[0] if single else items
        if isinstance(parts[j], ToolReturnPart) and all(isinstance(i, str) for i in items):
            # A tool's text and its images' lines as one text: a list of texts would be
            # sent as a JSON array.
            content = "\n".join(cast(list[str], items))
        parts[j] = dataclasses.replace(part, content=content)
    return dataclasses.replace(msg, parts=parts)


def describe_old_images(
    messages: Sequence[ModelMessage],
    views: GovernedViews | None = None,
    turns: int = IMAGE_TURNS,
    budget: int = IMAGE_BYTES,
) -> list[ModelMessage]:
    """Images sent again only while recent: the rest as one line each.

    An image stays in the conversation, and pydantic-ai would send it again with every
    later request, each time at its full cost. The rule: the images of the last ``turns``
    turns are sent as images, newest first, while together they stay within ``budget``
    bytes (the newest one always); every other image is sent as ``OLD_IMAGE`` with its
    type, pixels and size.
    The model read each image when it was new; it can look again (read_file, run_python,
    ``@name``) when it needs to. The session keeps the images (new messages are built).
    """
    from pydantic_ai.messages import ModelRequest

    boundary = 0
    for n, start in enumerate(_turn_starts_back(messages, 0), 1):
        if n == turns:
            boundary = start
            break
    out = list(messages)
    used = 0
    for i in range(len(out) - 1, -1, -1):
        msg = out[i]
        if not isinstance(msg, ModelRequest):
            continue
        drop: set[tuple[int, int]] = set()
        for j, k, image in reversed(_images(msg)):
            if i >= boundary and (not used or used + len(image.data) <= budget):
                used += len(image.data)
            else:
                drop.add((j, k))
        if not drop:
            continue
        key = frozenset(drop)
        if views is None:
            out[i] = _described(msg, key)
        else:
            out[i] = views.view(msg, "images", key, lambda m=msg, d=key: _described(m, d))
    return out


CONTEXT_PREFIX = "[Co: context for this message]\n"
"""Starts the part that carries a prompt's per-turn context (the memories relevant to it)."""


def _with_context(
    messages: list[ModelMessage], views: GovernedViews | None, context: Callable[[str], str]
) -> list[ModelMessage]:
    """Each prompt preceded by its turn's context, built once per prompt and kept (in
    ``views``; without, built again, as an estimate of what was sent).

    Per-turn context in the system prompt would change the very start of every request;
    after its own prompt, it is part of the prefix later requests share.
    """
    from pydantic_ai.messages import UserPromptPart

    def build(msg: Any) -> Any:
        # Just before the prompt: the prompt stays the request's last user message.
        at = max(i for i, p in enumerate(msg.parts) if isinstance(p, UserPromptPart))
        text = msg.parts[at].content
        extra = context(text) if isinstance(text, str) and not is_summary(msg) else ""
        if not extra:
            return msg
        parts = list(msg.parts)
        parts.insert(at, UserPromptPart(CONTEXT_PREFIX + extra))
        return dataclasses.replace(msg, parts=parts)

    if views is None:
        return [build(m) if _has_prompt(m) else m for m in messages]
    return [
        views.view(m, "context", None, lambda m=m: build(m)) if _has_prompt(m) else m
        for m in messages
    ]


def govern_history(
    messages: Sequence[ModelMessage],
    settings: Settings,
    views: GovernedViews | None = None,
    context: Callable[[str], str] | None = None,
) -> list[ModelMessage]:
    """What the model is sent: the window, then old tool outputs and runaway answers cut,
    and the images of older turns described.

    With ``context`` (a prompt's per-turn context, such as the memories relevant to it),
    each prompt is preceded by its context: with ``views``, as it was when first sent.
    """
    if views is None:
        governed = _govern(messages, settings, None)
        return governed if context is None else _with_context(governed, None, context)
    with views.one_pass():
        governed = _govern(messages, settings, views)
        return governed if context is None else _with_context(governed, views, context)


def _govern(
    messages: Sequence[ModelMessage], settings: Settings, views: GovernedViews | None
) -> list[ModelMessage]:
    head, cut, recent = _lines(messages, settings.max_history_messages)
    windowed = _windowed(messages, head, cut, views)
    before = recent - cut + head if cut > head else recent
    trimmed = truncate_tool_returns(windowed, settings.tool_output_trim_chars, views, before)
    return describe_old_images(cut_runaway_answers(trimmed, views), views)


def _part_chars(part: Any) -> int:
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return len(content)
    if content is not None:
        if hasattr(part, "model_response_str"):
            return len(part.model_response_str())
        return sum(len(c) for c in content if isinstance(c, str))
    args = getattr(part, "args", None)
    if isinstance(args, str):
        return len(args) + len(getattr(part, "tool_name", ""))
    if isinstance(args, dict):
        import json

        return len(json.dumps(args)) + len(getattr(part, "tool_name", ""))
    return 0


_SAMPLES = 6
"""Requests a calibration looks back over."""


def token_calibration(
    history: Sequence[ModelMessage],
    settings: Settings,
    context: Callable[[str], str] | None = None,
) -> tuple[float, float] | None:
    """(scale, offset): billed prompt tokens ≈ scale × estimate + offset; None before any
    request reported its count (llama.cpp, Ollama and the cloud providers all do).

    Each reported request's estimate is made as ``estimate_tokens`` makes the next one
    (the governed history with each prompt's ``context``, plus the instructions it was
    sent with), so the fit carries
    what the estimate cannot see: the model's tokenizer (the scale) and the tool
    definitions, chat template and context put with each prompt (the offset). It is fitted
    on the last few requests when their sizes differ enough; else the last request's
    difference is taken as the offset alone, which the next request, one turn longer,
    barely changes.
    """
    from pydantic_ai.messages import ModelRequest, ModelResponse

    samples: list[tuple[int, int]] = []
    for i in range(len(history) - 1, 0, -1):
        msg = history[i]
        if not isinstance(msg, ModelResponse) or msg.usage.input_tokens <= 0:
            continue
        sent = history[:i]
        request = sent[-1]
        instructions = request.instructions if isinstance(request, ModelRequest) else None
        estimate = estimate_tokens(govern_history(sent, settings, context=context))
        estimate += len(instructions or "") // _CHARS_PER_TOKEN
        samples.append((estimate, msg.usage.input_tokens))
        if len(samples) == _SAMPLES:
            break
    if not samples:
        return None
    last_estimate, last_billed = samples[0]
    xs = [x for x, _ in samples]
    if len(samples) >= 3 and max(xs) - min(xs) >= 0.2 * max(xs):
        mean_x = sum(xs) / len(xs)
        mean_y = sum(y for _, y in samples) / len(samples)
        spread = sum((x - mean_x) ** 2 for x in xs)
        scale = sum((x - mean_x) * (y - mean_y) for x, y in samples) / spread
        if 0.5 <= scale <= 3:
            # Through the last request: the one most like the next.
            return scale, last_billed - scale * last_estimate
    return 1.0, float(last_billed - last_estimate)


def estimate_tokens(messages: Sequence[ModelMessage]) -> int:
    """A cheap estimate of the prompt tokens a history costs (four characters a token)."""
    chars = 0
    for msg in messages:
        for part in msg.parts:
            chars += _part_chars(part) + 8  # a little per part for roles and framing
    return chars // _CHARS_PER_TOKEN
