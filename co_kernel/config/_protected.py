"""Which files hold Co's own secrets, wherever they lie.

One answer for every guard: the files tools refuse these files, the shell sandbox masks
them and the auto-approval classifier asks before a command that names one. Protected are

- Co's user settings file (``<config dir>/settings.json``, under ``CO_HOME`` when set) and
  the project's ``.co/settings.json``: both may hold API keys;
- the Google token and OAuth client files (settings ``google_token_path`` and
  ``google_client_secrets``, by default in the config dir), the token's temporary file
  while it is rewritten, Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS``,
  gcloud's ``application_default_credentials.json``), and every path setting whose name
  says it holds a token, secret or credential;
- any file in the top of Co's config dir whose name says it holds a token, secret,
  credential or settings (a backup ``settings.json.bak``, a second token);
- a path that is the value of a secret setting (an MCP server's env value
  ``/home/me/sa.json``), unless it is a folder (``HOME=/home/me`` names no secret file);
- anywhere, a file named ``.env`` or ``.env.<anything>`` (``.env.local``), ignoring case:
  on case-insensitive file systems (macOS, Windows) ``.ENV`` is the same file.

Paths are compared after resolving symbolic links and ignoring case, so neither a link
nor another spelling of the name reaches a protected file. No directory is protected as a
whole: the config dir also holds skills and knowledge files the person may want read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import Settings

__all__ = ["is_protected", "is_protected_name", "protected_paths"]

_ENV_NAME = re.compile(r"\.env(?:\..*)?", re.IGNORECASE | re.DOTALL)
# Names (in the config dir) and setting names that say "credentials inside".
_CREDENTIAL_WORD = re.compile(r"token|secret|credential|settings", re.IGNORECASE)
_CREDENTIAL_SETTING = re.compile(r"token|secret|credential", re.IGNORECASE)


def is_protected_name(name: str) -> bool:
    """Whether a file called ``name`` is protected wherever it is (``.env``, ``.env.*``)."""
    return _ENV_NAME.fullmatch(name) is not None


def _absolute(path: Path, workspace: Path) -> Path:
    path = path.expanduser()
    return path if path.is_absolute() else workspace / path


def _secret_values(settings: Settings) -> Iterable[str]:
    """Every secret setting's value: the ``SecretStr`` fields and MCP env/header values."""
    from pydantic import SecretStr

    for name in type(settings).model_fields:
        value = getattr(settings, name, None)
        if isinstance(value, SecretStr):
            yield value.get_secret_value()
    for spec in settings.mcp_servers.values():
        yield from spec.secret_values()


def credential_files(settings: Settings | None, environ: Mapping[str, str]) -> list[Path]:
    """OAuth token and client files: Google's (by setting or default, and the token's
    temporary file), every path setting named for a token, secret or credential, and
    Application Default Credentials. Also what the redactor reads secrets from."""
    from . import paths

    config_dir = paths().config_dir
    token = config_dir / "google_token.json"
    client = config_dir / "google_client_secrets.json"
    found: list[Path] = []
    if settings is not None:
        token = settings.google_token_path or token
        client = settings.google_client_secrets or client
        for name in type(settings).model_fields:
            value = getattr(settings, name, None)
            if isinstance(value, Path) and _CREDENTIAL_SETTING.search(name):
                found.append(value)
    # The token is written to a temporary file, then renamed over the old one.
    found += [token, token.with_name(f".{token.name}.tmp"), client]
    if environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        found.append(Path(environ["GOOGLE_APPLICATION_CREDENTIALS"]))
    gcloud = environ.get("CLOUDSDK_CONFIG") or "~/.config/gcloud"
    found.append(Path(gcloud) / "application_default_credentials.json")
    return list(dict.fromkeys(p.expanduser() for p in found))


def protected_paths(settings: Settings, workspace: Path) -> list[Path]:
    """Absolute paths of the files that hold Co's own secrets (they need not exist)."""
    from . import paths

    config_dir = paths().config_dir
    found = [paths().settings_file, workspace / ".co" / "settings.json"]
    found += credential_files(settings, os.environ)
    named = (Path(v).expanduser() for v in _secret_values(settings) if v.startswith(("/", "~/")))
    found += [p for p in named if not p.is_dir()]
    try:
        with os.scandir(config_dir) as entries:
            found += [
                Path(e.path)
                for e in entries
                if _CREDENTIAL_WORD.search(e.name) and not e.is_dir(follow_symlinks=False)
            ]
    except OSError:
        pass  # no config dir yet
    absolute = (_absolute(p, workspace) for p in found)
    return list(dict.fromkeys(Path(os.path.abspath(p)) for p in absolute))


def _key(path: str) -> str:
    return path.casefold()


def is_protected(path: Path, settings: Settings, workspace: Path) -> bool:
    """Whether ``path`` (as given, or where its links lead) is a protected file."""
    from . import paths

    path = _absolute(path, workspace)
    spellings = {os.path.abspath(path), os.path.realpath(path)}
    if any(is_protected_name(os.path.basename(s)) for s in spellings):
        return True
    keys = {_key(s) for s in spellings}
    config_dir = paths().config_dir
    config = {_key(os.path.abspath(config_dir)), _key(os.path.realpath(config_dir))}
    if any(
        os.path.dirname(k) in config and _CREDENTIAL_WORD.search(os.path.basename(k)) for k in keys
    ):
        return True
    return any(
        {_key(str(p)), _key(os.path.realpath(p))} & keys
        for p in protected_paths(settings, workspace)
    )
