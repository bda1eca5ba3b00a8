"""Co's exceptions, one hierarchy split by who reads the message (as pydantic-ai's are)::

    CoError                          base of everything Co raises on purpose
    ├── ToolSignal                   raised inside a tool: what the model reads, not the person
    │   ├── ToolError                    a tool's failure of a known kind (ToolErrorKind)
    │   ├── ScopeViolation               a path outside what the tool may touch
    │   ├── FetchRefused                 a URL the web guard will not fetch
    │   └── TextFileError                a file a tool will not read or write as text
    │       └── PathChanged                  a folder or file on the way changed under the guard
    ├── UserError                    the person must change something; the message names the fix
    │   ├── ConfigError                  a setting is missing or wrong
    │   │   ├── ProviderNotConfigured        no model chosen, or its key is missing
    │   │   ├── UnknownProvider              `%model` / CO_MODEL names a provider Co does not know
    │   │   ├── CredentialError              the credential store cannot be read or written
    │   │   └── GoogleAuthUnavailable        no usable Google credentials
    │   ├── MagicError                   bad input to a `%` magic
    │   ├── SessionLookupError           no saved session, or several, match an id (a LookupError)
    │   ├── DefinitionError              a skill or subagent file that cannot be used
    │   └── ScrubError                   a notebook `co-kernel scrub` cannot read or write
    └── RunError                     Co could not finish what was asked; the message says why
        ├── SandboxUnavailable           the sandbox cannot run commands
        ├── SessionConflict              another kernel saved the session meanwhile
        ├── PageError                    the notebook's page did not answer (none, closed, refused)
        ├── PageReplayMismatch           a replayed notebook edit differs from the recorded one
        ├── CompactError                 compaction failed; the history is unchanged
        ├── DatabaseTooNew               a database file written by a newer Co
        ├── BudgetRefused                a model request could pass a budget; it is not sent
        ├── UnfinishedResponse *         the model's answer has no finish reason (ModelAPIError)
        ├── ReplayMismatch *             a request the replay script has no step for (ModelAPIError)
        └── CoLimitExceeded *            a Co rate limit was reached (UsageLimitExceeded)

``*`` These three are pydantic-ai's errors too, so pydantic-ai handles them as its own
(retries, fallbacks, a budget that ends the turn). They are defined beside the code that
raises them (``UnfinishedResponse`` and ``ReplayMismatch`` by the model layer,
``CoLimitExceeded`` in ``co_kernel.telemetry``): this module is imported at kernel start,
which must not pay pydantic-ai's import (about 0.5 s). Co's ``UserError`` is the person's
mistake at the notebook; pydantic-ai's ``UserError`` is a programmer's.
"""

from __future__ import annotations

import enum
from pathlib import Path

__all__ = [
    "BudgetRefused",
    "CoError",
    "CompactError",
    "ConfigError",
    "CredentialError",
    "DatabaseTooNew",
    "DefinitionError",
    "FetchRefused",
    "GoogleAuthUnavailable",
    "MagicError",
    "PageError",
    "PageReplayMismatch",
    "PathChanged",
    "ProviderNotConfigured",
    "RunError",
    "SandboxUnavailable",
    "ScopeViolation",
    "ScrubError",
    "SessionConflict",
    "SessionLookupError",
    "TextFileError",
    "ToolError",
    "ToolErrorKind",
    "ToolSignal",
    "UnknownProvider",
    "UserError",
]


class CoError(Exception):
    """Base class of the errors Co raises on purpose."""


# Signals tools raise: the tool, or ToolErrorGuard, turns them into what the model reads.


class ToolSignal(CoError):
    """Raised inside a tool; its message is for the model, which tries another way."""


class ToolErrorKind(enum.Enum):
    """How the model should react to a failed tool call."""

    TERMINAL = "terminal"
    """Retrying will not help: the model reads the error and picks another way."""
    TRANSIENT = "transient"
    """The same call may work in a moment: the model calls again."""
    MISUSE = "misuse"
    """The arguments were wrong: the model corrects them, guided by a hint."""


class ToolError(ToolSignal):
    """Raised by a tool to report a failure of a known kind."""

    def __init__(self, kind: ToolErrorKind, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.hint = hint


class ScopeViolation(ToolSignal):
    """A path the scope does not allow; the message says why, for the model."""

    def __init__(self, reason: str, target: str, action: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.target = target
        self.action = action


class FetchRefused(ToolSignal):
    """The guard refused a URL; ``reason`` is for the model and the audit log."""

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.url = url


class TextFileError(ToolSignal):
    """A file a tool will not read or write as text; the message says why."""


class PathChanged(TextFileError):
    """A folder or file on the way became a link (or a file) after the guard checked it."""


# The person's mistakes: a setting, a magic's arguments, a file they wrote.


class UserError(CoError):
    """The person must change something; the message says what and how."""


class ConfigError(UserError):
    """A setting is missing or wrong; the message says which and how to fix it."""


class ProviderNotConfigured(ConfigError):
    """No model is chosen, or the chosen provider lacks its key."""


class UnknownProvider(ConfigError):
    """The model string names a provider Co does not support."""


class CredentialError(ConfigError):
    """The store cannot be read or written; the message names the setting or variable to fix."""


class GoogleAuthUnavailable(ConfigError):
    """No usable Google credentials; the message says how to get them."""


class MagicError(UserError):
    """Bad input to a magic; the message is shown on one line with the usage."""


class SessionLookupError(UserError, LookupError):
    """No session, or more than one, matches an id; the message says what to type."""


class DefinitionError(UserError):
    """A definition file that cannot be used, with where the problem is."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


class ScrubError(UserError):
    """A file `co-kernel scrub` was given is not a notebook it can read or write."""


# Run-time failures: nothing to fix in a setting, but the person should read why.


class RunError(CoError):
    """Co could not finish what was asked; the message says what stopped it."""


class SandboxUnavailable(RunError):
    """The sandbox cannot run commands; the message says how to fix it."""


class SessionConflict(RunError):
    """Another kernel wrote the session after the revision a save continues from."""

    def __init__(self, session_id: str, kernel_id: str | None) -> None:
        super().__init__(f"session {session_id} was written by kernel {kernel_id} meanwhile")
        self.session_id = session_id
        """The session both kernels continued."""
        self.kernel_id = kernel_id
        """The kernel that wrote it since."""


class PageError(RunError):
    """The notebook's page could not answer: none connected, it closed, timed out or refused."""


class PageReplayMismatch(RunError):
    """A notebook edit a replay proposes differs from the one recorded; the message names
    the difference. It ends the turn: the model's answers do not fit the notebook."""


class CompactError(RunError):
    """Compaction could not run; the message says why and the history is unchanged."""


class BudgetRefused(RunError):
    """A model request could pass a budget (``budget_*``); the message says what was spent
    and how to go on. The rate-limit capability turns it into the turn's stop."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message)
        self.setting = setting
        """The budget's setting, ``budget_day`` or ``budget_day_tokens``."""


class DatabaseTooNew(RunError):
    """A database whose schema is newer than this Co knows: left as it is, not written."""

    def __init__(self, path: str, version: int, known: int) -> None:
        super().__init__(
            f"{path} is at schema version {version}, but this Co knows versions up to "
            f"{known} only: a newer Co wrote it. Upgrade co-kernel to use it (this Co "
            "leaves it untouched)."
        )
        self.path = path
        """The database file."""
        self.version = version
        """Its ``user_version``."""
        self.known = known
        """The newest version this Co's migrations reach."""
