"""Where frontends send Jupyter outputs: the kernel's display publisher and stdout."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, Protocol, cast

from ._controls import terminal_safe
from ._safe_html import safe_bundle

__all__ = ["OUTPUT_TAG", "KernelPublisher", "Publisher", "RedactingPublisher", "TerminalPublisher"]

OUTPUT_TAG = "co"
"""Key of every Co output's metadata: ``{"request": msg_id, "display_id": id, "cell": id,
"count": execution count}`` (``cell`` and ``count`` where the request named its cell).

A notebook keeps an output's metadata but never its transient display id, and a page
drops iopub output whose request it did not send. With this tag the JupyterLab
extension of a reloaded page or a second tab finds the cell a turn writes to (by the
execute request's id, or by JupyterLab's cellId where the cell shows nothing of the
turn yet) and the output a display update replaces.
"""


class Publisher(Protocol):
    """The few output operations a frontend needs."""

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        display_id: str | None = None,
        update: bool = False,
    ) -> int | None:
        """Send display_data, or update_display_data when ``update``; returns the characters
        of the text it sent (``text_size``), or None where it does not count them."""

    def stream(self, name: str, text: str) -> None:
        """Append text to stdout or stderr of the cell."""

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        """Send an ``error`` output: what clients show and save as the cell's failure."""

    def flush(self) -> None:
        """Push buffered stream text now."""


def text_size(data: dict[str, Any]) -> int:
    """Characters of a bundle's text (HTML, source): what its output message carries, but
    for the few hundred bytes of its envelope and tag."""
    return sum(len(value) for value in data.values() if isinstance(value, str))


class KernelPublisher:
    """Publishes through an IPython shell's display publisher (parent header included)."""

    def __init__(self, shell: Any) -> None:
        self._pub = shell.display_pub
        self._shell = shell
        self._kernel = getattr(shell, "kernel", None)

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        display_id: str | None = None,
        update: bool = False,
    ) -> int:
        # The last stop before the wire: no Markdown leaves unrendered (``_safe_html``).
        data = safe_bundle(data)
        transient = {"display_id": display_id} if display_id else None
        tag = {**(metadata or {}).get(OUTPUT_TAG, {}), **self.origin()}
        if display_id:
            tag["display_id"] = display_id
        self._pub.publish(
            data, {**(metadata or {}), OUTPUT_TAG: tag}, transient=transient, update=update
        )
        return text_size(data)

    def origin(self) -> dict[str, Any]:
        """Where an output shown now belongs: the running cell's request, and JupyterLab's
        id of the cell with the count its reply will carry (for a page that never receives
        that reply: a reload, a second tab)."""
        tag: dict[str, Any] = {"request": self._pub.parent_header.get("msg_id")}
        parent: dict[str, Any] = self._kernel.get_parent() if self._kernel is not None else {}
        meta: dict[str, Any] = parent.get("metadata") or {}
        cell: object = meta.get("cellId")
        if isinstance(cell, str):
            tag["cell"] = cell
            tag["count"] = self._shell.execution_count
        return tag

    def stream(self, name: str, text: str) -> None:
        (sys.stderr if name == "stderr" else sys.stdout).write(text)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        self.flush()  # after what the cell printed, as IPython orders a traceback
        pub = self._pub
        content = {"ename": ename, "evalue": evalue, "traceback": traceback}
        topic = pub.topic.replace(b"display_data", b"error") if pub.topic else None
        pub.session.send(pub.pub_socket, "error", content, pub.parent_header, ident=topic)

    def flush(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()


class RedactingPublisher:
    """Scrubs secrets from everything a cell shows before it leaves the kernel.

    Display data is redacted whole (a notebook's streamed Markdown is re-sent whole on
    each update, so a secret is always seen complete). Stream text arrives in pieces, so
    the last words of an unfinished line are held back until the line ends or ``drain()``
    is called: a secret, or a header such as ``Authorization: Bearer x``, split across two
    writes would match in neither.
    """

    HOLD_WORDS = 3
    """Words of the current line kept back; enough for ``Authorization: Bearer <token>``."""

    def __init__(
        self,
        inner: Publisher,
        scrub: Callable[[str], str],
        image_hosts: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self.inner = inner
        self._scrub = scrub
        self._image_hosts = image_hosts
        """The hosts whose images load without a click (the person's ``image_hosts``),
        asked at each display so a changed setting applies at once."""
        self._held: dict[str, str] = {}

    def _clean(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, dict):
            return {k: self._clean(v) for k, v in cast(dict[str, Any], value).items()}
        if isinstance(value, list):
            return [self._clean(v) for v in cast(list[Any], value)]
        return value

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        display_id: str | None = None,
        update: bool = False,
    ) -> int | None:
        # Markdown is rendered here, between two scrubs: the source's secrets go before (a
        # secret with "&" or "<" is escaped in HTML), and the HTML's after, since a remote
        # image's placeholder shows its URL decoded, where a %-encoded secret reads plain.
        rendered = safe_bundle(self._clean(data), self._image_hosts())
        return self.inner.display(
            self._clean(rendered),
            self._clean(metadata) if metadata else metadata,
            display_id=display_id,
            update=update,
        )

    def stream(self, name: str, text: str) -> None:
        text = self._held.pop(name, "") + text
        # An unfinished last word stays raw: scrubbing half a token would redact the half
        # and let the rest through. Complete words are scrubbed together with the held
        # ones (scrubbed text is stable under scrubbing again), so context carries over.
        partial = re.search(r"\S+\Z", text)
        tail = partial.group(0) if partial else ""
        done = self._scrub(text[: len(text) - len(tail)])
        line_start = done.rfind("\n") + 1
        words = [m.start() for m in re.finditer(r"\S+\s*", done[line_start:])]
        # Fewer words than that: the whole unfinished line waits.
        hold_from = line_start + (words[-self.HOLD_WORDS] if len(words) > self.HOLD_WORDS else 0)
        ready, held = done[:hold_from], done[hold_from:] + tail
        if held:
            self._held[name] = held
        if ready:
            self.inner.stream(name, ready)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        self.drain()
        self.inner.error(ename, self._scrub(evalue), [self._scrub(line) for line in traceback])

    def flush(self) -> None:
        self.inner.flush()

    def drain(self) -> None:
        """Write the held-back words: the cell is over, nothing more will complete them."""
        for name in list(self._held):
            self.inner.stream(name, self._scrub(self._held.pop(name)))
        self.inner.flush()


class TerminalPublisher:
    """Shows control characters visibly in what a terminal client's cell prints.

    While ``active`` (the cell came from a client that asked for terminal text, the
    ``co_terminal`` metadata), stream text, the ``text/plain`` of displays and errors pass
    ``terminal_safe``: whatever of it came from outside (an answer, a file name that
    ``!ls`` printed, a provider's error) can colour text but not drive the terminal. Only
    colour and weight sequences survive, which is all Co's own rendering uses. The kernel
    sends these outputs to every client of the cell; a notebook page showing them gets the
    same visible marks, which is where the text would have been anyway.
    """

    def __init__(self, inner: Publisher) -> None:
        self.inner = inner
        self.active = False

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        display_id: str | None = None,
        update: bool = False,
    ) -> int | None:
        plain = data.get("text/plain")
        if self.active and isinstance(plain, str):
            data = {**data, "text/plain": terminal_safe(plain)}
        return self.inner.display(data, metadata, display_id=display_id, update=update)

    def stream(self, name: str, text: str) -> None:
        self.inner.stream(name, terminal_safe(text) if self.active else text)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        if self.active:
            ename, evalue = terminal_safe(ename), terminal_safe(evalue)
            traceback = [terminal_safe(line) for line in traceback]
        self.inner.error(ename, evalue, traceback)

    def flush(self) -> None:
        self.inner.flush()
