"""Markdown rendered for a terminal (`jupyter console`), block by block as the answer streams.

A terminal cannot redraw what it printed, so finished blocks (a paragraph, a list, a closed
code fence, a whole table: ``find_block_boundary``) are rendered with rich as soon as the
next one starts, and the rest when the answer ends. Rendering happens only for a client
that asks for terminal text (``TERMINAL_METADATA`` in its requests' metadata: Co's
jupyter_console config sets it) and only when the kernel finds a terminal, which it does
when `jupyter console` started it; the width is the terminal's. Anywhere else (a piped
console, a kernel started by a server) the text stays the Markdown source.
"""

from __future__ import annotations

import functools
import io
import os
import sys
from typing import Any, ClassVar

from ._markdown import find_block_boundary

__all__ = [
    "TERMINAL_METADATA",
    "TerminalMarkdown",
    "colour_diff",
    "render_markdown",
    "terminal_colours",
    "terminal_width",
]

TERMINAL_METADATA = "co_terminal"
"""Key a terminal client sets (true) in its requests' metadata to get terminal text: the
answer as rendered Markdown on stdout and approvals as ``[y/n/a]`` input requests."""


def terminal_width() -> int | None:
    """Columns of the terminal the kernel runs in, or None when it runs in none."""
    for fd in _output_descriptors():
        try:
            if os.isatty(fd):
                # The terminal's own size, not COLUMNS: a variable inherited from whatever
                # started the console says nothing about the window it now runs in.
                return os.get_terminal_size(fd).columns or 100
        except (ValueError, OSError):  # closed, or no size to tell
            continue
    return None


def terminal_colours() -> bool:
    """Whether the terminal the kernel runs in (``terminal_width``) shows colours, as git
    decides it: not when ``TERM`` is unset or ``dumb``, nor when the person set
    ``NO_COLOR`` (no-color.org). The kernel inherits both from the console's shell."""
    if os.environ.get("NO_COLOR"):
        return False
    return os.environ.get("TERM", "dumb") not in ("", "dumb")


_RESET = "\x1b[0m"
_DIFF_STYLES = (
    ("+++", "\x1b[1m"),  # file names, in bold as git shows them
    ("---", "\x1b[1m"),
    ("@@", "\x1b[36m"),  # hunk headers in cyan
    ("+", "\x1b[32m"),  # added lines in green
    ("-", "\x1b[31m"),  # removed lines in red
)


def colour_diff(lines: list[str]) -> list[str]:
    """The lines of a unified diff coloured as git colours them; other text as it is.

    The lines must be sanitised already (``terminal_safe``): only the colours added here
    are sequences, and each line ends with a reset, so none runs into the next.
    """
    if not any(line.startswith("@@") for line in lines):
        return lines  # not a diff: a "-" there is a list's, not a removal
    out: list[str] = []
    for line in lines:
        style = next((code for prefix, code in _DIFF_STYLES if line.startswith(prefix)), None)
        out.append(f"{style}{line}{_RESET}" if style else line)
    return out


def _output_descriptors() -> list[int]:
    """Descriptors that lead to where the kernel was started, best first.

    ipykernel points descriptors 1 and 2 at pipes of its own (to forward what
    subprocesses print) after saving copies of the originals; ``fileno()`` of its
    ``sys.stdout`` and ``sys.stderr`` answers with those copies. Without that capture
    (``PYTEST_CURRENT_TEST`` set, ``capture_fd_output`` off) ``sys.__stdout__`` is still
    the terminal. The controlling terminal (/dev/tty) is no help: jupyter_client starts
    every kernel in a session of its own, which has none.
    """
    fds: list[int] = []
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            fd = stream.fileno() if stream is not None else None
        except (ValueError, OSError):  # io.UnsupportedOperation is an OSError
            continue
        if fd is not None and fd not in fds:
            fds.append(fd)
    return fds


@functools.cache
def _markdown_class() -> Any:
    """rich's Markdown, whose table cells wrap a word longer than their column.

    rich ends such a word (a path, a URL, a model name) with "…" where the column ends:
    what was cut is then nowhere on the screen. Folded, it goes on in the next line.
    """
    from rich.console import JustifyMethod
    from rich.markdown import Markdown, MarkdownElement, TableDataElement

    class FoldingCell(TableDataElement):
        def __init__(self, justify: JustifyMethod) -> None:
            super().__init__(justify)
            self.content.overflow = "fold"

    class TerminalMarkdownDocument(Markdown):
        elements: ClassVar[dict[str, type[MarkdownElement]]] = {
            **Markdown.elements,
            "td_open": FoldingCell,
            "th_open": FoldingCell,
        }

    return TerminalMarkdownDocument


def render_markdown(text: str, width: int) -> str:
    """``text`` as a terminal shows it: styles as ANSI codes, tables fitted to ``width``
    (a cell's long words wrapped within its column)."""
    from rich.console import Console

    Markdown = _markdown_class()
    out = io.StringIO()
    console = Console(
        file=out, width=width, force_terminal=True, color_system="standard", soft_wrap=False
    )
    # No OSC 8 hyperlinks: a link shows its target after its text, as the person needs to
    # see where it goes (and the terminal sanitiser would show the sequence anyway).
    console.print(Markdown(text, hyperlinks=False))
    # rich pads every line to the width: spaces a copy from the terminal would carry along.
    return "".join(line.rstrip(" ") + "\n" for line in out.getvalue().splitlines())


class TerminalMarkdown:
    """Turns streamed Markdown into rendered blocks; feed deltas, then ``finish``."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._pending = ""

    def feed(self, delta: str) -> str:
        """The rendering of the blocks ``delta`` finished ("" while a block is open)."""
        self._pending += delta
        cut = find_block_boundary(self._pending)
        if cut <= 0:
            return ""
        done, self._pending = self._pending[:cut], self._pending[cut:]
        return render_markdown(done, self.width)

    def finish(self) -> str:
        """The rendering of whatever is left; the renderer is then empty."""
        rest, self._pending = self._pending, ""
        return render_markdown(rest, self.width) if rest.strip() else ""
