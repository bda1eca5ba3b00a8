"""What Co uses of the Jupyter kernel it runs in and of its IPython shell.

The kernel (``co_kernel.kernel.CoKernel``, an ipykernel ``IPythonKernel``) and its shell
satisfy these; the dispatcher and the magics are typed by them rather than by ipykernel's
classes: what the publisher, stdin and the notebook bridge they hand them to rely on is
written down in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["JupyterKernel", "JupyterShell"]


class JupyterKernel(Protocol):
    """The running ipykernel: comms, the stdin channel, the message being answered."""

    @property
    def comm_manager(self) -> Any:
        """Where the labextension's comms (``co.approvals``) are registered."""
        ...

    @property
    def stdin_socket(self) -> Any:
        """The stdin channel's socket, for input requests."""
        ...

    @property
    def session(self) -> Any:
        """jupyter_client's Session, which signs and sends messages."""
        ...

    @property
    def _parent_ident(self) -> Mapping[str, Any]:
        """Routing identity of the request being answered, per channel."""
        ...

    def get_parent(self, channel: str | None = None) -> dict[str, Any]:
        """The message being answered (its header and metadata)."""
        ...


class JupyterShell(Protocol):
    """The kernel's IPython shell: where displays go, the user's namespace, running code."""

    @property
    def display_pub(self) -> Any:
        """The display publisher (its parent header, session and socket)."""
        ...

    @property
    def user_ns(self) -> dict[str, Any]:
        """The person's Python namespace."""
        ...

    def transform_cell(self, raw_cell: str) -> str: ...

    async def run_cell_async(self, raw_cell: str, *args: Any, **kwargs: Any) -> Any: ...
