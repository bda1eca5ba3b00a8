"""CoDeps: the per-session dependency object injected into every tool.

Mutable session state lives here, never in module globals (two sessions never share it); one
instance per kernel session, shared by every turn of that session. It sits below the
tools, the sandbox cell and the turn that all use it, and above what it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypedDict, TypeVar, cast

if TYPE_CHECKING:
    from .config import PermissionRule, Settings
    from .notebook import NotebookContext
    from .replay import Recorder
    from .sandbox import SandboxProtocol, StatusCallback
    from .telemetry import AuditLog

__all__ = ["CoDeps", "Extras", "ExtrasKey", "Output", "Todo"]

T = TypeVar("T")


class Todo(TypedDict):
    """One item of the agent's checklist (``write_todos``), as the frontend shows it."""

    content: str
    status: Literal["pending", "in_progress", "completed"]


Output = dict[str, Any]
"""One Jupyter output as nbformat writes it (``stream``, ``display_data``, ``error``...):
JSON whose shape depends on its ``output_type``, passed on to the frontend as it is."""


@dataclass(frozen=True, eq=False)
class ExtrasKey(Generic[T]):
    """The typed key of one entry of `Extras`, declared once by the module that owns it.

    Keys compare by identity: two owners never share an entry by choosing the same name.
    """

    name: str
    """What the entry is, for a person reading a session's state."""


class Extras:
    """Per-integration state of a session (cached clients, stores, ledgers) under typed keys.

    The deps sit below the tools, so they cannot name the tools' types; each owner declares
    an ``ExtrasKey[ItsType]`` instead, and every read and write through it is typed.
    """

    def __init__(self) -> None:
        self._values: dict[ExtrasKey[Any], object] = {}

    def get(self, key: ExtrasKey[T]) -> T | None:
        """The entry under ``key``, or None."""
        # Only `__setitem__` and `get_or_create` write, and both take a value of the key's type.
        return cast("T | None", self._values.get(key))

    def __getitem__(self, key: ExtrasKey[T]) -> T:
        return cast(T, self._values[key])

    def __setitem__(self, key: ExtrasKey[T], value: T) -> None:
        self._values[key] = value

    def __contains__(self, key: ExtrasKey[Any]) -> bool:
        return key in self._values

    def get_or_create(self, key: ExtrasKey[T], make: Callable[[], T]) -> T:
        """The entry under ``key``, made by ``make()`` and kept the first time."""
        found = self._values.get(key)
        if found is None:
            # One atomic `setdefault`: two threads asking at once (the lock of a client
            # that tools share) get the same entry.
            found = self._values.setdefault(key, make())
        return cast(T, found)

    def pop(self, key: ExtrasKey[T]) -> T | None:
        """Remove the entry under ``key``; returns it, or None if there was none."""
        return cast("T | None", self._values.pop(key, None))

    def values(self) -> Iterator[object]:
        """Every entry (the session closes those that can be closed)."""
        return iter(list(self._values.values()))


@dataclass
class CoDeps:
    """Runtime resources and mutable state of one kernel session."""

    settings: Settings
    """Effective settings (read-only by convention; `%model` and `%yolo` change state below)."""
    session_id: str
    """Unique id of this conversation (survives `%resume`)."""
    kernel_id: str
    """Id of the kernel process's session, for labelling containers."""
    workspace: Path
    """The notebook's directory: the sandbox mount and the files tools' root."""
    project_trusted: bool = True
    """Whether the person trusts the workspace, so its ``.co/`` files (instructions,
    knowledge, agents, skills) apply (``config._trust``)."""
    auto_confirm: bool = False
    """Session yolo: approve every side-effectful call without asking."""
    sandbox: SandboxProtocol | None = None
    """Created lazily on first `!cmd` or shell tool call."""
    turn_index: int = 0
    """Number of the turn in progress, for audit rows and spans."""
    model_label: str = ""
    """provider:model of the run these deps serve (a subagent's own), which prices its
    requests against the budgets."""
    notebook_path: str | None = None
    """The notebook's path when the frontend says it."""
    page_tokens: Extras = field(default_factory=Extras)
    """Pagination state of the tools' listings, under the paging module's key (a subagent
    starts its own)."""
    todos: list[Todo] = field(default_factory=list[Todo])
    """The agent's checklist for the session."""
    notebook: NotebookContext | None = None
    """The kernel's Python namespace and recent cells; None outside a kernel."""
    audit: AuditLog | None = None
    """Where tool calls and guarded accesses are recorded; None disables auditing."""
    depth: int = 0
    """Subagent nesting: 0 for Co itself, 1 for a subagent it delegated to, ..."""
    session_rules: list[PermissionRule] = field(default_factory=list)
    """Permission rules added for this session (`%allow`, `%ask`, `%deny`, "Always allow")."""
    extras: Extras = field(default_factory=Extras)
    """Per-integration cached clients and credentials (never module globals)."""
    recorder: Recorder | None = None
    """The session's recording of its model exchanges (`%record`), and a replay's decisions."""
    displays: dict[str, list[Output]] = field(default_factory=dict[str, list[Output]])
    """What a tool call displayed (``run_python``'s figures and tables as MIME bundles), by
    call id, until the turn draws it in the cell under the call's card."""

    @property
    def project(self) -> Path | None:
        """The folder whose ``.co/`` files apply: the workspace once trusted, else None."""
        return self.workspace if self.project_trusted else None

    def ensure_sandbox(self, on_status: StatusCallback | None = None) -> SandboxProtocol:
        """The session's sandbox; built from settings the first time (cheap: no Docker call yet).

        Shared by ``!cmd`` cells and the shell tool, so both run in the same container.
        """
        if self.sandbox is None:
            # Imported on first use: the Docker client is not needed to start a session.
            from .sandbox import create_sandbox

            s = self.settings
            self.sandbox = create_sandbox(
                mode=s.sandbox,
                image=s.sandbox_image,
                workspace=self.workspace,
                session_id=self.session_id,
                kernel_id=self.kernel_id,
                network=s.sandbox_network,
                memory=s.sandbox_memory,
                cpus=s.sandbox_cpus,
                pids_limit=s.sandbox_pids_limit,
                max_timeout=s.sandbox_max_timeout,
                on_status=on_status,
                settings=s,
            )
        return self.sandbox
