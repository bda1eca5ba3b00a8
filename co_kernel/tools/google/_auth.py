"""Google sign-in: the installed-app OAuth flow, the token file, lazy credential resolution.

Resolution order, the person's own sign-in first: the authorized-user token that ``co-kernel google auth``
saved -> Application Default Credentials -> none. The token is kept in Co's credential store
(entry ``google_token``: the OS keyring or the encrypted file); a token file is used instead
when the setting ``google_token_path`` names one, and the default file an older Co wrote
(``<config dir>/google_token.json``) is still read when the store has no token. Registration at kernel start only looks
at files and environment variables (`find_credentials`): no network, no import of the
client libraries. Credentials are loaded on the first tool call and cached in
``CoDeps.extras`` for the session. When google-auth refreshes the access token of the saved
token during a call, the new token is written back where it came from (`save_refreshed_token`), so
the next kernel starts with it instead of refreshing again.

ADC here means a credentials file ADC would use (``GOOGLE_APPLICATION_CREDENTIALS`` or
gcloud's ``application_default_credentials.json``). ``google.auth.default()`` is called only
when such a file exists, so it never falls through to probing the Compute Engine metadata
server, which costs a network timeout on every machine that is not on Google Cloud.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from ...config import CredentialStore, paths, private_folder
from ...exceptions import CredentialError, GoogleAuthUnavailable
from ...session_state import ExtrasKey

if TYPE_CHECKING:
    from ...config import Settings
    from ...session_state import CoDeps

__all__ = [
    "SCOPES",
    "CredentialSource",
    "client_secrets_path",
    "find_credentials",
    "forget_credentials",
    "not_configured_reason",
    "resolve_credentials",
    "run_auth_flow",
    "save_refreshed_token",
    "save_token",
    "session_credentials",
    "token_path",
]

# The least the tools need: read Drive files, read mail and write drafts (compose does not
# allow sending without the person), read calendars.
SCOPES: tuple[str, ...] = (
    "https://www.googleapis.com/auth/drive.readonly",
    "https://www.googleapis.com/auth/gmail.readonly",
    "https://www.googleapis.com/auth/gmail.compose",
    "https://www.googleapis.com/auth/calendar.readonly",
)

TOKEN_ENTRY = "google_token"
"""The credential store entry holding the token (authorized-user JSON)."""
_ADC_LOGIN = "gcloud auth application-default login --scopes=" + ",".join(
    ["openid", "https://www.googleapis.com/auth/cloud-platform", *SCOPES]
)


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CredentialSource:
    """Where the session's Google credentials come from."""

    kind: Literal["stored", "token", "adc"]
    """The token `co-kernel google auth` saved in the credential store or in a file, or
    Application Default Credentials."""
    path: Path | None
    """The file the credentials are read from; None for the credential store."""

    @property
    def fix(self) -> str:
        """What the person runs to sign in again with this source."""
        if self.kind != "adc":
            return "run `co-kernel google auth` in a terminal to sign in again"
        return f"run `{_ADC_LOGIN}` (or `co-kernel google auth`) to sign in again"

    def describe(self) -> str:
        if self.kind == "stored":
            return f"token from `co-kernel google auth` (credential store, `{TOKEN_ENTRY}`)"
        label = "token from `co-kernel google auth`" if self.kind == "token" else "ADC file"
        return f"{label} ({self.path})"


@dataclass
class _TokenFile:
    """The saved token a session's credentials were read from, to write a refresh back."""

    path: Path | None
    """The token file; None for the credential store."""
    token: str | None
    """The access token the file holds."""
    refresh_token: str | None
    """The refresh token the file held when Co last read or wrote it."""


def token_path(settings: Settings) -> Path:
    """Where `co-kernel google auth` keeps the token (setting `google_token_path`)."""
    if settings.google_token_path is not None:
        return settings.google_token_path.expanduser()
    return paths().config_dir / "google_token.json"


def client_secrets_path(settings: Settings) -> Path:
    """The OAuth client file the sign-in flow needs (setting `google_client_secrets`)."""
    if settings.google_client_secrets is not None:
        return settings.google_client_secrets.expanduser()
    return paths().config_dir / "google_client_secrets.json"


def _adc_file(environ: Mapping[str, str]) -> Path | None:
    explicit = environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if explicit:
        return Path(explicit).expanduser()
    # gcloud's well-known file, found the way google.auth._cloud_sdk finds it.
    config = environ.get("CLOUDSDK_CONFIG")
    if config:
        root = Path(config)
    elif os.name == "nt":
        root = Path(environ.get("APPDATA", "C:\\")) / "gcloud"
    else:
        root = Path.home() / ".config" / "gcloud"
    well_known = root / "application_default_credentials.json"
    return well_known if well_known.is_file() else None


def find_credentials(
    settings: Settings, environ: Mapping[str, str] = os.environ
) -> CredentialSource | None:
    """The credentials a session would use, from file checks alone (cheap: the store's index
    says whether it holds a token; no value is read)."""
    if settings.google_token_path is None and TOKEN_ENTRY in _store(settings).names():
        return CredentialSource("stored", None)
    token = token_path(settings)
    if token.is_file():
        return CredentialSource("token", token)
    adc = _adc_file(environ)
    if adc is not None and adc.is_file():
        return CredentialSource("adc", adc)
    return None


def not_configured_reason(settings: Settings) -> str:
    """Why Google tools are not registered, naming what to do."""
    return (
        f"no Google credentials: run `co-kernel google auth` (it needs an OAuth client file "
        f"of type Desktop app at {client_secrets_path(settings)}, setting "
        "`google_client_secrets`), or set GOOGLE_APPLICATION_CREDENTIALS to an ADC file"
    )


def resolve_credentials(
    settings: Settings, environ: Mapping[str, str] = os.environ
) -> tuple[Any, CredentialSource]:
    """Load credentials: token file, else ADC; raises GoogleAuthUnavailable with the fix."""
    source = find_credentials(settings, environ)
    if source is None:
        raise GoogleAuthUnavailable(f"Google is not signed in: {not_configured_reason(settings)}.")
    if source.kind != "adc":
        from google.oauth2.credentials import Credentials

        try:
            # No scopes argument: the token records the scopes it was granted.
            info = json.loads(_read_token(settings, source.path))
            creds = Credentials.from_authorized_user_info(info)  # type: ignore[no-untyped-call]
        except (OSError, ValueError, CredentialError) as exc:
            raise GoogleAuthUnavailable(
                f"The saved Google token ({source.describe()}) cannot be used ({exc}); "
                f"{source.fix}."
            ) from exc
        if settings.google_token_uri:
            # google-auth always reads Google's endpoint from the file, whatever it says.
            creds = creds.with_token_uri(settings.google_token_uri)  # type: ignore[no-untyped-call]
        return creds, source
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        # google-auth leaves part of `default`'s signature untyped.
        default = cast("Callable[..., tuple[Any, str | None]]", google.auth.default)  # pyright: ignore[reportUnknownMemberType]
        creds = default(scopes=list(SCOPES))[0]
    except DefaultCredentialsError as exc:
        raise GoogleAuthUnavailable(
            f"Application Default Credentials ({source.path}) cannot be used ({exc}); {source.fix}."
        ) from exc
    return creds, source


_EXTRAS_KEY = ExtrasKey["tuple[Any, CredentialSource]"]("google_creds")
"""The session's credentials (google-auth's, untyped) and where they came from."""
_LOCK_KEY = ExtrasKey[threading.Lock]("google_creds_lock")
_WRITE_BACK_KEY = ExtrasKey["_TokenFile"]("google_token_write_back")
"""The token file the credentials were read from, to write a refreshed token back to."""


def session_credentials(deps: CoDeps) -> tuple[Any, CredentialSource]:
    """The session's credentials, resolved on first use and cached in ``deps.extras``."""
    # Tools run in worker threads; two first calls at once must not both resolve.
    lock = deps.extras.get_or_create(_LOCK_KEY, threading.Lock)
    with lock:
        cached = deps.extras.get(_EXTRAS_KEY)
        if cached is None:
            # A failure is not cached: signing in during the session fixes the next call.
            cached = resolve_credentials(deps.settings)
            deps.extras[_EXTRAS_KEY] = cached
            creds, source = cached
            if source.kind != "adc":
                # Only Co's own token is written back; an ADC file belongs to gcloud.
                deps.extras[_WRITE_BACK_KEY] = _TokenFile(
                    source.path, creds.token, creds.refresh_token
                )
        return cached


def save_refreshed_token(deps: CoDeps) -> bool:
    """Write the session's token back where it was read if google-auth refreshed it; never
    raises.

    Returns whether it wrote. A token that now holds another refresh token (the person
    signed in again meanwhile) or is gone (signed out) is left as it is.
    """
    lock = deps.extras.get_or_create(_LOCK_KEY, threading.Lock)
    with lock:
        saved = deps.extras.get(_WRITE_BACK_KEY)
        cached = deps.extras.get(_EXTRAS_KEY)
        if saved is None or cached is None:
            return False
        creds = cached[0]
        if not creds.token or creds.token == saved.token:
            return False
        try:
            on_disk = json.loads(_read_token(deps.settings, saved.path)).get("refresh_token")
        except (OSError, ValueError, AttributeError, CredentialError):
            return False
        if on_disk != saved.refresh_token:
            return False
        try:
            if saved.path is None:
                _store(deps.settings).set(TOKEN_ENTRY, creds.to_json())
            else:
                save_token(creds, saved.path)
        except (OSError, CredentialError):
            # The call itself succeeded; the next kernel merely refreshes once more.
            where = saved.path or "the credential store"
            log.warning("could not write the refreshed Google token to %s", where)
            return False
        saved.token, saved.refresh_token = creds.token, creds.refresh_token
        return True


def forget_credentials(deps: CoDeps) -> None:
    """Drop the cached credentials so the next call reads the files again."""
    deps.extras.pop(_EXTRAS_KEY)
    deps.extras.pop(_WRITE_BACK_KEY)


def _store(settings: Settings) -> CredentialStore:
    return CredentialStore(settings.credential_store)


def _read_token(settings: Settings, path: Path | None) -> str:
    """The saved token's JSON, from its file or the credential store (ValueError: none)."""
    if path is not None:
        return path.read_text(encoding="utf-8")
    entry = _store(settings).get(TOKEN_ENTRY)
    if entry is None:
        raise ValueError(f"the credential store holds no `{TOKEN_ENTRY}`")
    return entry[0]


def save_token(creds: Any, path: Path) -> Path:
    """Write authorized-user credentials readable by their owner only (0600)."""
    private_folder(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    # Created with 0600 from the start: the refresh token is never readable by others, not
    # even between open and chmod.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(creds.to_json())
        os.chmod(tmp, 0o600)  # an older tmp file may have had other bits
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def run_auth_flow(
    settings: Settings, *, open_browser: bool = True, host: str = "localhost", port: int = 0
) -> str:
    """Sign in through the browser (installed-app flow) and save the token; returns where:
    the credential store, or the file ``google_token_path`` names."""
    secrets = client_secrets_path(settings)
    if not secrets.is_file():
        raise GoogleAuthUnavailable(
            f"No OAuth client file at {secrets}. In the Google Cloud console create an OAuth "
            "client ID of type 'Desktop app', download its JSON to that path (or set "
            "`google_client_secrets`), enable the Drive, Gmail and Calendar APIs, and run "
            "`co-kernel google auth` again."
        )
    # google-auth-oauthlib ships no types: its flow and credentials are used as documented.
    from google_auth_oauthlib.flow import (  # pyright: ignore[reportMissingTypeStubs]
        InstalledAppFlow,
    )

    try:
        flow: Any = InstalledAppFlow.from_client_secrets_file(  # pyright: ignore[reportUnknownMemberType]
            str(secrets), scopes=list(SCOPES)
        )
    except (ValueError, KeyError, OSError) as exc:
        raise GoogleAuthUnavailable(
            f"{secrets} is not an OAuth client file of type 'Desktop app' ({exc})."
        ) from exc
    creds: Any = flow.run_local_server(
        host=host,
        port=port,
        open_browser=open_browser,
        authorization_prompt_message=(
            "Open this address in a browser and allow Co to read Drive, Gmail and Calendar "
            "and to write Gmail drafts:\n{url}"
        ),
        success_message="Co is signed in to Google. You can close this tab.",
        access_type="offline",
        # Ask again even for a returning person, so Google issues a refresh token.
        prompt="consent",
    )
    if settings.google_token_path is not None:
        return f"{save_token(creds, token_path(settings))} (readable by you only)"
    store = _store(settings)
    try:
        store.set(TOKEN_ENTRY, creds.to_json())
    except CredentialError as exc:
        raise GoogleAuthUnavailable(f"The token could not be stored: {exc}.") from exc
    return f"the credential store as `{TOKEN_ENTRY}`: {store.describe()}"
