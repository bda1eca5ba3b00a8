"""Notebook objects in prompts: `{name}` interpolation and `@name` attachments."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._images import ModelImage, image_of_object

__all__ = ["Expanded", "describe_object", "expand_references"]

_INTERPOLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# '@' starts a reference only at a word start, so e-mail addresses stay text.
_ATTACH = re.compile(r"(?<![\w@.])@([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class Expanded:
    """A prompt after its references were resolved."""

    text: str
    """The prompt sent to the model, attachments appended."""
    attached: list[str] = field(default_factory=list)
    """Names whose description was attached."""
    interpolated: list[str] = field(default_factory=list)
    """Names replaced by their value."""
    images: list[ModelImage] = field(default_factory=list)
    """The images of attached figures and image objects, to send with the prompt."""


def _truncate(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 1] + "…"


def describe_object(value: Any, *, cap: int = 4000) -> str:
    """A compact description: type, size, and a head or a truncated repr."""
    kind = type(value)
    lines = [f"type: {kind.__module__}.{kind.__qualname__}"]
    shape = getattr(value, "shape", None)
    if shape is not None and not callable(shape):
        lines.append(f"shape: {tuple(shape)}")
    elif hasattr(value, "__len__") and not isinstance(value, type):
        with contextlib.suppress(TypeError):
            lines.append(f"len: {len(value)}")
    dtypes = getattr(value, "dtypes", None)
    head = getattr(value, "head", None)
    if dtypes is not None and callable(head):  # a DataFrame (or alike)
        try:
            lines.append("dtypes:\n" + _truncate(dtypes.to_string(), cap // 4))
            lines.append("head:\n" + value.head().to_string())
        except Exception as exc:  # a broken __repr__ must not break the turn
            lines.append(f"(could not show a head: {type(exc).__name__})")
    else:
        try:
            text = repr(value)
        except Exception as exc:
            text = f"<repr failed: {type(exc).__name__}>"
        lines.append("repr: " + _truncate(text, cap // 2))
    return _truncate("\n".join(lines), cap)


def expand_references(
    prompt: str, namespace: Mapping[str, Any], *, cap: int = 4000, send_images: bool = False
) -> Expanded:
    """Interpolate `{name}` and attach `@name` for names that exist in the namespace.

    Unknown names are left as written, so a literal `{` needs no escaping. Only what the
    person typed is expanded: a value brought in by `{name}` (a papermill parameter) is
    text, and an `@other` inside it attaches nothing. A figure or an image attached goes
    into ``images`` when ``send_images`` (the model reads images), else it is one line.
    """
    out = Expanded(prompt)

    def interpolate(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in namespace:
            return match.group(0)
        out.interpolated.append(name)
        try:
            return str(namespace[name])
        except Exception as exc:
            return f"<str failed: {type(exc).__name__}>"

    text = _INTERPOLATE.sub(interpolate, prompt)
    sections = []
    for name in dict.fromkeys(_ATTACH.findall(prompt)):
        if name in namespace:
            out.attached.append(name)
            section = f"### @{name}\n{describe_object(namespace[name], cap=cap)}"
            image = image_of_object(namespace[name], f"image of @{name}")
            if image is not None:
                how = "attached below" if send_images else "not sent: this model reads no images"
                section += f"\nimage: {image.describe()} ({how})"
                if send_images:
                    out.images.append(image)
            sections.append(section)
    if sections:
        text += "\n\n---\nObjects attached from the notebook's Python namespace:\n\n" + "\n\n".join(
            sections
        )
    out.text = text
    return out
