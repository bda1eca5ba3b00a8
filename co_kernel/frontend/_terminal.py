"""Markdown rendered for a terminal (`jupyter console`), block by block as the answer streams.

A terminal cannot redraw what it printed, so finished blocks (a paragraph, a list, a closed
code fence, a whole table: ``find_block_boundary``) are rendered with rich as soon as the
next one starts, and the rest when the answer ends. Rendering happens only when the
kernel's own stdout is a terminal, which is the case when `jupyter console` started the
kernel; its width is the terminal's. Anywhere else (a piped client, a kernel started by a
server) the text stays the Markdown source.
"""

from __future__ import annotations

import io
import os
import sys

from ._markdown import find_block_boundary

__all__ = ["TerminalMarkdown", "render_markdown", "terminal_width"]


def terminal_width() -> int | None:
    """Columns of the terminal the kernel runs in, or None when it runs in none."""
    stdout = sys.__stdout__
    try:
        if stdout is None or not stdout.isatty():
            return None
        # The terminal's own size, not COLUMNS: a variable inherited from whatever started
        # the console says nothing about the window it now runs in.
        return os.get_terminal_size(stdout.fileno()).columns or 100
    except (ValueError, OSError):  # closed, or no size to tell
        return None


def render_markdown(text: str, width: int) -> str:
    """``text`` as a terminal shows it: styles as ANSI codes, tables fitted to ``width``."""
    from rich.console import Console
    from rich.markdown import Markdown

    out = io.StringIO()
    console = Console(
        file=out, width=width, force_terminal=True, color_system="standard", soft_wrap=False
    )
    console.print(Markdown(text))
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
