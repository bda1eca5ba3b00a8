"""Workspace trust at each cell: keep the session's settings in step with the folder's
trust, and ask the person once when the folder brings something (``config._trust``).

Before every cell the folder's power-giving files are hashed again: ``.co/`` and the code its
MCP servers load from the folder (up to 2,000 files each; a file whose stat is unchanged is
not read again, about 5 ms for 300 files).
When their trust or their content differs from what the session was built with (the
person trusted the folder in another kernel, ``%trust revoke``, a file changed while the
kernel runs) the session is rebuilt around the same conversation: the settings, prompt,
agents, skills and MCP servers then are what the folder's trust allows. An untrusted
folder that asks for something gets one question per kernel (and again when its files
change): a card in a notebook, ``y/n`` in a console, a notice in a headless run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import (
    FolderTrust,
    folder_trust,
    paths,
    trust_folder,
    trust_notice,
    trusted_for_code,
)
from ..frontend import (
    KernelStdin,
    PendingApprovals,
    Publisher,
    ask_trust_stdin,
    ask_trust_widget,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ..frontend import JupyterKernel
    from ..turn import ChatSession

__all__ = ["TrustGate", "current_trust", "trusts_code"]


def current_trust(session: ChatSession) -> FolderTrust:
    """The workspace's trust as the files and the user's settings say now."""
    settings = session.settings
    return folder_trust(
        session.workspace,
        trusted_folders=settings.trusted_folders,
        policy=settings.trust_policy,
    )


def trusts_code(session: ChatSession) -> bool:
    """Whether the person's Python may import the workspace's own modules now."""
    settings = session.settings
    return trusted_for_code(
        session.workspace,
        trusted_folders=settings.trusted_folders,
        policy=settings.trust_policy,
    )


class TrustGate:
    """The dispatcher's trust check before each cell."""

    def __init__(
        self,
        publisher: Publisher,
        pending: PendingApprovals,
        kernel: JupyterKernel | None,
        rebuild: Callable[[], Awaitable[ChatSession]],
    ) -> None:
        self._pub = publisher
        self._pending = pending
        self._kernel = kernel
        self._rebuild = rebuild
        self._told: frozenset[tuple[str, str]] | None = None
        """The files of the folder when the person was last told or asked (once each)."""

    async def sync(self, session: ChatSession) -> ChatSession:
        """The session to run the cell with: rebuilt if the folder's trust or files changed."""
        built = session.loaded.trust
        if built is None:
            return session
        now = current_trust(session)
        if now.status != built.status or now.files != built.files:
            session = await self._rebuild()
        return session

    async def before_cell(self, session: ChatSession, kind: str, code: str) -> ChatSession:
        """Sync, then ask about an untrusted folder that asks for something, once."""
        session = await self.sync(session)
        trust = session.loaded.trust
        if trust is None or not (trust.askable or trust.status == "refused"):
            return session
        if not session.loaded.held and trust.status != "changed":
            return session  # nothing it brings would act: nothing to ask
        seen = frozenset(trust.files.items())
        if self._told == seen:
            return session
        self._told = seen
        if code.lstrip().startswith("%trust"):
            return session  # the person is deciding right now
        can_ask = trust.askable and self._kernel is not None and kind in ("notebook", "console")
        notice = trust_notice(trust, session.loaded.held, paths().settings_file, can_ask=can_ask)
        if not can_ask:
            self._pub.display({"text/markdown": notice, "text/plain": notice})
            return session
        timeout = session.settings.approval_timeout
        folder = str(trust.folder)
        if kind == "notebook":
            trusted = await ask_trust_widget(
                self._pub, self._pending, notice, folder=folder, timeout=timeout
            )
        else:
            trusted = await ask_trust_stdin(
                KernelStdin(self._kernel), self._pub, notice, timeout=timeout
            )
        if not trusted:
            return session
        trust_folder(trust.folder, trust.files)  # as shown: a later change asks again
        return await self.sync(session)
