"""The credential store: secrets kept in the OS keyring or encrypted at rest, never shown.

Two backends, chosen for new secrets by the ``credential_store`` setting:

- ``keyring``: the OS keyring through the ``keyring`` library (macOS Keychain, Windows
  Credential Locker, the freedesktop Secret Service), when it offers a usable backend; its
  ``fail``, ``null`` and plaintext backends do not count;
- ``file``: one Fernet-encrypted file, ``<data dir>/credentials.fernet``. Its key comes
  from ``CO_SECRET_KEY`` or else from a key file kept apart from the data,
  ``<config dir>/credentials.key`` (mode 0600, made on first use);
- ``auto`` (the default): the keyring when usable, else the file.

An index, ``<data dir>/credentials.json``, lists each stored name and its backend (names
only, never values): ``co-kernel secrets list`` reads it, and settings resolution asks a
backend only for names the index holds, so a machine without stored secrets never loads
``keyring`` or ``cryptography``. Nothing here returns a value to anything that shows it:
values go to settings, the redactor and the Google credentials only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..exceptions import CredentialError
from ._private import private_folder
from ._project import PROJECT_SECRET, project_secret_name

__all__ = [
    "CREDENTIAL_NAME",
    "KEY_ENV",
    "SECRET_REF",
    "SERVICE",
    "CredentialStore",
    "ProjectSecrets",
    "check_name",
    "mcp_entry_name",
    "plain_secrets",
    "resolve_secrets",
    "usable_keyring",
    "write_private",
]

Backend = Literal["keyring", "file"]

SERVICE = "co-kernel"
"""The keyring service every entry is stored under (the entry's name is the username)."""
KEY_ENV = "CO_SECRET_KEY"
"""The environment variable holding the file backend's Fernet key."""
SECRET_REF = "secret:"
"""A setting whose value is ``secret:NAME`` takes the stored entry NAME."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}")
# Environment variable names of MCP servers that hold credentials (the redactor uses it too).
CREDENTIAL_NAME = re.compile(
    r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE_KEY|ACCESS_KEY)", re.IGNORECASE
)
_KEY_HINT = (
    'make one with `python -c "from cryptography.fernet import Fernet; '
    'print(Fernet.generate_key().decode())"`'
)


def check_name(name: str) -> str:
    """The name if it can name an entry; CredentialError otherwise."""
    if not _NAME.fullmatch(name):
        raise CredentialError(
            f"'{name}' is not a secret name: use letters, digits and _ . : @ - (at most 128, "
            "starting with a letter or digit)"
        )
    return name


def _paths() -> tuple[Path, Path, Path]:
    from . import paths

    where = paths()
    return (
        where.data_dir / "credentials.json",
        where.data_dir / "credentials.fernet",
        where.config_dir / "credentials.key",
    )


def write_private(path: Path, data: bytes) -> None:
    """Write a file readable by its owner only, atomically (never a half-written store)."""
    private_folder(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o600)  # an older tmp file may have had other bits
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _keyring_usable(backend: Any) -> bool:
    from keyring.backends import fail, null

    kind = f"{type(backend).__module__}.{type(backend).__name__}".lower()
    if isinstance(backend, fail.Keyring | null.Keyring) or "plaintext" in kind:
        return False
    try:
        return float(backend.priority) >= 1
    except Exception:
        return False


def usable_keyring() -> Any | None:
    """The OS keyring backend ``keyring`` chose, if it keeps secrets protected; else None."""
    try:
        import keyring
        from keyring.backends.chainer import ChainerBackend
    except ImportError:
        return None
    try:
        chosen = keyring.get_keyring()
    except Exception:
        return None
    candidates = list(chosen.backends) if isinstance(chosen, ChainerBackend) else [chosen]
    return next((b for b in candidates if _keyring_usable(b)), None)


def _keyring_label(backend: Any) -> str:
    return f"keyring ({getattr(backend, 'name', type(backend).__name__)})"


class CredentialStore:
    """Co's stored secrets: the index, the keyring and the encrypted file."""

    def __init__(
        self,
        mode: Literal["auto", "keyring", "file"] = "auto",
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.mode = mode
        self.environ = os.environ if environ is None else environ
        self.index_path, self.file_path, self.key_path = _paths()
        self._keyring: Any = None
        self._file_cache: dict[str, str] | None = None

    # -- the index: names and backends, never values ----------------------------------------

    def names(self) -> dict[str, Backend]:
        """Stored names and where each is kept (an unreadable index: none)."""
        try:
            data = json.loads(self.index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        entries = data.get("secrets") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            return {}
        return {str(k): v for k, v in entries.items() if v in ("keyring", "file")}

    def _write_index(self, names: Mapping[str, Backend]) -> None:
        body = {"version": 1, "secrets": dict(sorted(names.items()))}
        write_private(self.index_path, json.dumps(body, indent=2).encode())

    # -- where new secrets go ----------------------------------------------------------------

    def target(self) -> Backend:
        """The backend ``set`` writes to under the ``credential_store`` setting."""
        if self.mode == "file":
            return "file"
        if self._keyring_backend(required=self.mode == "keyring") is not None:
            return "keyring"
        return "file"

    def describe(self) -> str:
        """Where new secrets go, in words (no value, no key)."""
        try:
            target = self.target()
        except CredentialError as exc:
            return str(exc)
        if target == "keyring":
            return _keyring_label(self._keyring)
        key = f"key from {KEY_ENV}" if self.environ.get(KEY_ENV) else f"key file {self.key_path}"
        return f"file ({self.file_path}, {key})"

    def _keyring_backend(self, *, required: bool) -> Any:
        if self._keyring is None:
            self._keyring = usable_keyring()
        if self._keyring is None and required:
            raise CredentialError(
                "`credential_store` is 'keyring' but no usable OS keyring was found (none, or "
                "only keyring's fail/null/plaintext backends): start one (the freedesktop "
                "Secret Service, e.g. gnome-keyring) or set `credential_store` to 'file' or "
                "'auto'"
            )
        return self._keyring

    # -- reading and writing -----------------------------------------------------------------

    def get(self, name: str) -> tuple[str, Backend] | None:
        """The stored value and its backend; None when the name is not stored."""
        backend = self.names().get(name)
        if backend is None:
            return None
        value = self._keyring_get(name) if backend == "keyring" else self._read_file().get(name)
        return None if value is None else (value, backend)

    def values(self) -> dict[str, str]:
        """Every stored value by name; an unreadable backend leaves its entries out."""
        found: dict[str, str] = {}
        for name in self.names():
            with contextlib.suppress(CredentialError):
                entry = self.get(name)
                if entry is not None:
                    found[name] = entry[0]
        return found

    def set(self, name: str, value: str) -> Backend:
        """Store a value (replacing one of that name, wherever it was); returns the backend."""
        check_name(name)
        if not value:
            raise CredentialError(f"no value given for {name}: nothing stored")
        target = self.target()
        names = self.names()
        previous = names.get(name)
        if target == "keyring":
            self._keyring_call("set_password", name, value)
        else:
            self._write_file({**self._read_file(), name: value})
        if previous is not None and previous != target:
            self._remove(name, previous)
        names[name] = target
        self._write_index(names)
        return target

    def delete(self, name: str) -> Backend | None:
        """Remove an entry; returns where it was, None when there was none."""
        names = self.names()
        backend = names.pop(name, None)
        if backend is None:
            return None
        self._remove(name, backend)
        self._write_index(names)
        return backend

    def _remove(self, name: str, backend: Backend) -> None:
        if backend == "keyring":
            from keyring.errors import PasswordDeleteError

            with contextlib.suppress(PasswordDeleteError):  # already gone from the keyring
                self._keyring_call("delete_password", name)
        else:
            rest = self._read_file()
            rest.pop(name, None)
            self._write_file(rest)

    # -- the keyring ---------------------------------------------------------------------------

    def _keyring_get(self, name: str) -> str | None:
        value = self._keyring_call("get_password", name)
        return value if isinstance(value, str) else None

    def _keyring_call(self, method: str, *args: str) -> Any:
        from keyring.errors import KeyringError, PasswordDeleteError

        backend = self._keyring_backend(required=False)
        if backend is None:
            raise CredentialError(
                "a secret is stored in the OS keyring, but no usable keyring is reachable "
                "now (is the Secret Service running and unlocked?); store it again with "
                "`co-kernel secrets set NAME`, or set `credential_store` to 'file'"
            )
        try:
            return getattr(backend, method)(SERVICE, *args)
        except PasswordDeleteError:
            raise
        except (KeyringError, OSError, RuntimeError) as exc:
            raise CredentialError(f"the OS keyring ({backend.name}) refused: {exc}") from exc

    # -- the encrypted file ------------------------------------------------------------------

    def _fernet(self, *, create: bool) -> Any:
        from cryptography.fernet import Fernet

        env_key = self.environ.get(KEY_ENV)
        if env_key:
            try:
                return Fernet(env_key.strip().encode())
            except ValueError as exc:
                raise CredentialError(
                    f"{KEY_ENV} is not a Fernet key (32 url-safe base64-encoded bytes): {_KEY_HINT}"
                ) from exc
        try:
            key = self.key_path.read_bytes().strip()
        except FileNotFoundError:
            if not create:
                raise CredentialError(
                    f"the encrypted credential file {self.file_path} has no key: the key file "
                    f"{self.key_path} is missing; set {KEY_ENV} to the key it was written with"
                ) from None
            key = Fernet.generate_key()
            write_private(self.key_path, key + b"\n")
        except OSError as exc:
            raise CredentialError(f"cannot read the key file {self.key_path}: {exc}") from exc
        try:
            return Fernet(key)
        except ValueError as exc:
            raise CredentialError(
                f"the key file {self.key_path} holds no Fernet key; restore it or set {KEY_ENV}"
            ) from exc

    def _read_file(self) -> dict[str, str]:
        if self._file_cache is not None:
            return dict(self._file_cache)
        try:
            token = self.file_path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise CredentialError(f"cannot read {self.file_path}: {exc}") from exc
        from cryptography.fernet import InvalidToken

        fernet = self._fernet(create=False)
        try:
            data = json.loads(fernet.decrypt(token))
        except InvalidToken:
            source = KEY_ENV if self.environ.get(KEY_ENV) else f"the key file {self.key_path}"
            raise CredentialError(
                f"the encrypted credential file {self.file_path} cannot be decrypted with the "
                f"key from {source}: set {KEY_ENV} to the key the secrets were stored with "
                "(secrets in it are not used)"
            ) from None
        self._file_cache = {str(k): str(v) for k, v in data.items()}
        return dict(self._file_cache)

    def _write_file(self, entries: dict[str, str]) -> None:
        fernet = self._fernet(create=True)
        write_private(self.file_path, fernet.encrypt(json.dumps(entries).encode()))
        self._file_cache = dict(entries)


# -- secrets written in settings files -------------------------------------------------------


def plain_secrets(
    data: Mapping[str, Any], secret_field: Any
) -> Iterator[tuple[tuple[str, ...], str, str]]:
    """Secret values written in a settings file's JSON: (path in the JSON, entry name, value).

    ``secret_field(key)`` names the secret setting a top-level key is (or None). Empty values
    and ``secret:NAME`` references are no secrets. In ``mcp_servers``, header values and the
    env values whose variable names a credential count, unless they only expand ``${VAR}``.
    """
    for key, value in data.items():
        name = secret_field(key)
        if name is not None and _is_plain(value):
            yield (key,), name, value
    servers = data.get("mcp_servers")
    if not isinstance(servers, dict):
        return
    for server, spec in servers.items():
        if not isinstance(spec, dict):
            continue
        for part in ("env", "headers"):
            values = spec.get(part)
            if not isinstance(values, dict):
                continue
            for key, value in values.items():
                wanted = part == "headers" or CREDENTIAL_NAME.search(key) is not None
                if wanted and _is_plain(value) and "${" not in value:
                    yield ("mcp_servers", server, part, key), mcp_entry_name(server, key), value


def mcp_entry_name(server: str, key: str) -> str:
    """The entry an empty MCP env or header value is looked up under."""
    return f"mcp_servers.{server}.{key}"


def _is_plain(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and not value.startswith(SECRET_REF)


# -- settings resolution ---------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectSecrets:
    """What the project file named: its secrets come from the project's own namespace."""

    label: str
    """The project file's layer label (its path) in ``origin``."""
    folder: Path
    """The project folder, which keys the namespace."""
    servers: frozenset[str]
    """MCP servers the project file defines (or replaces)."""


def resolve_secrets(
    merged: dict[str, Any],
    origin: Mapping[str, str],
    secret_fields: frozenset[str],
    problems: list[str],
    project: ProjectSecrets | None = None,
) -> dict[str, str]:
    """Fill empty secret settings and ``secret:NAME`` references from the store, in place.

    Returns where each secret in force comes from: ``keyring``, ``file``, ``environment`` or
    ``settings file``. The environment wins over the store; an entry that cannot be read is
    reported once in ``problems`` and left unset, and the store is never opened when no
    entry is needed. What the ``project`` file names (a secret setting, a server's env or
    header) is looked up in the project's own namespace only (``project_secret_name``): a
    cloned repository cannot read the user's general secrets.
    """
    store = CredentialStore(merged.get("credential_store", "auto"))
    stored = store.names()
    sources: dict[str, str] = {}
    failures: list[str] = []

    def lookup(entry: str, where: str, setting: str) -> tuple[str, Backend] | None:
        if entry not in stored:
            if entry.startswith(PROJECT_SECRET):  # what a project file names
                own = entry.split(":", 2)[2]
                problems.append(
                    f"{where}: {setting}: this folder has no secret '{own}' of its own "
                    f"(`co-kernel secrets set --for-project {own}` in this folder; your "
                    "other secrets are not given to a project file); left unset"
                )
            elif entry != setting:  # a `secret:NAME` that names nothing
                problems.append(
                    f"{where}: {setting}: the credential store has no secret '{entry}' "
                    f"(`co-kernel secrets set {entry}`); left unset"
                )
            return None
        try:
            return store.get(entry)
        except CredentialError as exc:
            if str(exc) not in failures:
                failures.append(str(exc))
                problems.append(f"credential store: {exc}")
            return None

    for name in sorted(secret_fields):
        value = merged.get(name)
        where = origin.get(name, "default")
        if isinstance(value, str) and value and not value.startswith(SECRET_REF):
            sources[name] = "environment" if where == "environment" else "settings file"
            continue
        if value is not None and not isinstance(value, str):
            continue  # not a string: validation reports it
        entry = value[len(SECRET_REF) :] if value else name
        if project is not None and where == project.label:
            entry = project_secret_name(project.folder, entry)
        found = lookup(entry, where, name)
        if found is None:
            merged.pop(name, None)
        else:
            merged[name], sources[name] = found
    servers = merged.get("mcp_servers")
    if isinstance(servers, dict):
        for server, spec in list(servers.items()):
            scoped = project is not None and server in project.servers
            folder = project.folder if scoped and project is not None else None
            servers[server] = _resolve_server(server, spec, lookup, sources, folder)
    return sources


def _resolve_server(
    server: str, spec: Any, lookup: Any, sources: dict[str, str], project: Path | None
) -> Any:
    """An MCP server with its empty and ``secret:NAME`` env and header values filled (from
    the ``project`` folder's namespace when the project file defines the server)."""
    from pydantic import SecretStr

    update: dict[str, dict[str, SecretStr]] = {}
    for part in ("env", "headers"):
        values: dict[str, SecretStr] = dict(getattr(spec, part))
        for key, secret in values.items():
            value = secret.get_secret_value()
            if value and not value.startswith(SECRET_REF):
                continue
            own = mcp_entry_name(server, key)
            entry = value[len(SECRET_REF) :] if value else own
            if project is not None:
                entry = project_secret_name(project, entry)
            found = lookup(entry, f"mcp_servers.{server}", own)
            if found is not None:
                values[key] = SecretStr(found[0])
                sources[own] = found[1]
                update[part] = values
    return spec.model_copy(update=update) if update else spec
