"""Where frontends send Jupyter outputs: the kernel's display publisher and stdout."""

from __future__ import annotations

import sys
from typing import Any, Protocol

__all__ = ["KernelPublisher", "Publisher"]


class Publisher(Protocol):
    """The few output operations a frontend needs."""

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        display_id: str | None = None,
        update: bool = False,
    ) -> None:
        """Send display_data, or update_display_data when ``update``."""

    def stream(self, name: str, text: str) -> None:
        """Append text to stdout or stderr of the cell."""

    def flush(self) -> None:
        """Push buffered stream text now."""


class KernelPublisher:
    """Publishes through an IPython shell's display publisher (parent header included)."""

    def __init__(self, shell: Any) -> None:
        self._pub = shell.display_pub

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        display_id: str | None = None,
        update: bool = False,
    ) -> None:
        transient = {"display_id": display_id} if display_id else None
        self._pub.publish(data, metadata or {}, transient=transient, update=update)

    def stream(self, name: str, text: str) -> None:
        (sys.stderr if name == "stderr" else sys.stdout).write(text)

    def flush(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
