"""Google credentials handed to a session without signing in, for the Google tools' tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from co_kernel.tools.google._auth import _EXTRAS_KEY, _WRITE_BACK_KEY, CredentialSource

if TYPE_CHECKING:
    from co_kernel.session_state import CoDeps

__all__ = ["set_session_credentials"]


def set_session_credentials(deps: CoDeps, creds: Any, source: CredentialSource) -> None:
    """Use these credentials for the session (as a host that signs in by other means would)."""
    deps.extras[_EXTRAS_KEY] = (creds, source)
    deps.extras.pop(_WRITE_BACK_KEY)  # not read from the file: nothing to write back
