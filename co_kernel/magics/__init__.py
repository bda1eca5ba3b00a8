"""`%` magics: one module per magic, whose docstring is its `%help` text.

A magic module defines ``USAGE`` (one line), optionally ``complete(ctx, arg_text)`` for Tab
completion, and ``async def run(ctx, args: str) -> str | RunPrompt | None`` returning Markdown to show (or
a prompt the cell runs as its turn).
Bad arguments raise ``MagicError``; the kernel turns it into a one-line message with the
usage. The registry is explicit (no decorators): one list says which magics exist, for
`%help` and completion alike, and importing a magic module registers nothing by itself.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, runtime_checkable

from ..exceptions import MagicError

if TYPE_CHECKING:
    from ..frontend import JupyterKernel
    from ..turn import SessionProtocol
    from ._complete import complete_reply, inspect_reply, is_complete_reply

__all__ = [
    "MAGICS",
    "Magic",
    "MagicContext",
    "MagicError",
    "RunPrompt",
    "complete_reply",
    "find_magic",
    "inspect_reply",
    "is_complete_reply",
    "magic_completer",
    "parse_magic",
]

# name -> module under co_kernel.magics
MAGICS: dict[str, str] = {
    "help": "help",
    "clear": "clear",
    "status": "status",
    "tools": "tools",
    "history": "history",
    "compact": "compact",
    "yolo": "yolo",
    "model": "model",
    "forget": "forget",
    "usage": "usage",
    "budget": "budget",
    "sessions": "sessions",
    "resume": "resume",
    "mcp": "mcp",
    "skills": "skills",
    "record": "record",
    "permissions": "permissions",
    "allow": "allow",
    "ask": "ask",
    "deny": "deny",
    "python": "python",
    "trust": "trust",
}

CELL_MAGICS = ("python",)
"""The magics that also stand as `%%name` on a cell's first line."""


@dataclass(frozen=True)
class RunPrompt:
    """What a magic returns to make its cell a turn with this prompt (`%mcp prompt`)."""

    text: str
    """The prompt, as if typed in the cell."""


@dataclass
class MagicContext:
    """What a magic may touch."""

    session: SessionProtocol
    """The kernel session's conversation, deps and model."""
    kernel: JupyterKernel | None = None
    """The kernel, for the few magics that need it (status of the sandbox, shutdown)."""
    cell_id: str | None = None
    """JupyterLab's id of the cell the magic runs in; None from other clients."""
    frontend: Literal["notebook", "console", "headless"] | None = None
    """Which frontend sent the cell (``dispatch.frontend_kind``); None outside a cell
    (completion and inspection)."""


@runtime_checkable
class Magic(Protocol):
    """What a magic module offers (its optional ``complete`` is ``magic_completer``'s)."""

    USAGE: str
    """One line: how the magic is typed."""
    __doc__: str | None
    """Its `%help` text."""

    async def run(self, ctx: MagicContext, args: str, /) -> str | RunPrompt | None:
        """Markdown to show, a prompt the cell runs as its turn, or nothing."""
        ...


Completer = Callable[[MagicContext, str], list[str]]
"""A magic's ``complete(ctx, arg_text)``: the candidates for the word being typed."""


def parse_magic(line: str) -> tuple[str, str]:
    """'%name args...' -> (name, args)."""
    body = line.strip()[1:]
    name, _, args = body.partition(" ")
    return name.strip().lower(), args.strip()


def find_magic(name: str) -> Magic:
    """The module of a magic, or MagicError with a did-you-mean."""
    module = MAGICS.get(name)
    if module is None:
        close = difflib.get_close_matches(name, list(MAGICS), n=1)
        hint = f" Did you mean %{close[0]}?" if close else ""
        raise MagicError(f"Unknown magic %{name}.{hint} Type %help for the list.")
    # The modules MAGICS names are Co's own, each written to the protocol (tests/magics
    # checks every one of them).
    return cast(Magic, importlib.import_module(f"{__name__}.{module}"))


def magic_completer(magic: Magic) -> Completer | None:
    """A magic's Tab completion, when it has one."""
    completer: Completer | None = getattr(magic, "complete", None)
    return completer


def magic_help(name: str) -> str:
    """The help text of one magic: usage and docstring."""
    module = find_magic(name)
    doc = (module.__doc__ or "").strip()
    return f"{module.USAGE}\n\n{doc}"


def __getattr__(name: str) -> Any:
    # Completion and inspection load with the first request for them (the kernel waits
    # for its warm-up imports first), not with the magics.
    if name in ("complete_reply", "inspect_reply", "is_complete_reply"):
        from . import _complete

        return getattr(_complete, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
