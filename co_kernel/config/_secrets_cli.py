"""``co-kernel secrets set|list|delete|import``: the credential store from a terminal.

Values are read, never printed: ``set`` reads one without echo from a terminal (getpass)
or from standard input when it is not a terminal (``... | co-kernel secrets set NAME``).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path
from typing import Any

from ..exceptions import CredentialError

__all__ = ["add_secrets_commands"]


def _store(args: argparse.Namespace) -> Any:
    """The store under the user's ``credential_store`` (a project file never sets it).

    Read from the settings file and the environment directly: `load_settings` would also
    read every stored value (and may ask to unlock the keyring) only to list names.
    """
    from . import paths
    from ._credentials import CredentialStore
    from ._loading import _read_json

    modes = ("auto", "keyring", "file")
    value = _read_json(paths().settings_file, []).get("credential_store")
    mode = value if value in modes else "auto"
    value = os.environ.get("CO_CREDENTIAL_STORE")
    mode = value if value in modes else mode
    return CredentialStore(mode)


def _entry_name(args: argparse.Namespace) -> str:
    """The entry ``args.name`` names: a secret setting's own name for any of its spellings
    (OPENAI_API_KEY: openai_api_key), in the ``--project`` folder's namespace with
    ``--for-project`` (what that folder's ``.co/settings.json`` may read)."""
    from . import SECRET_FIELDS, field_name, project_secret_name

    field = field_name(args.name)
    name = field if field in SECRET_FIELDS else args.name
    return project_secret_name(Path(args.project), name) if args.for_project else name


def _read_value(name: str) -> str:
    if sys.stdin.isatty():
        return getpass.getpass(f"Value for {name} (not shown): ")
    return sys.stdin.read().rstrip("\r\n")


def _cmd_set(args: argparse.Namespace) -> int:
    from ._credentials import check_name

    name = _entry_name(args)
    try:
        check_name(name)
        store = _store(args)
        store.set(name, _read_value(name))
    except CredentialError as exc:
        print(f"co-kernel secrets set: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, EOFError):
        print("co-kernel secrets set: cancelled; nothing was stored.", file=sys.stderr)
        return 130
    renamed = f" (the setting {args.name})" if name != args.name else ""
    if args.for_project:
        renamed = f" ({args.name} of the folder {Path(args.project).resolve()})"
    print(f"Stored {name}{renamed} in the {store.describe()}.")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    store = _store(args)
    names = store.names()
    for name, backend in names.items():
        print(f"{name}\t{backend}")
    if not names:
        print("No secrets stored (`co-kernel secrets set NAME` stores one).")
    print(f"New secrets go to: {store.describe()}", file=sys.stderr)
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    name = _entry_name(args)
    try:
        backend = _store(args).delete(name)
    except CredentialError as exc:
        print(f"co-kernel secrets delete: {exc}", file=sys.stderr)
        return 2
    if backend is None:
        print(f"co-kernel secrets delete: no secret named {name}", file=sys.stderr)
        return 1
    print(f"Deleted {name} from the {backend}.")
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from . import paths
    from ._credentials_import import import_settings_file
    from ._settings import _secret_field

    project = Path(args.project).resolve()
    store = _store(args)
    where = paths()
    moved = 0
    for path in (where.settings_file, project / ".co" / "settings.json"):
        try:
            report = import_settings_file(
                path,
                store,
                config_dir=where.config_dir,
                user_file=where.settings_file,
                secret_field=_secret_field,
                project=None if path == where.settings_file else project,
            )
        except CredentialError as exc:
            print(f"co-kernel secrets import: {path}: {exc}; file left as it was", file=sys.stderr)
            return 2
        except ValueError as exc:
            print(f"co-kernel secrets import: {path}: not valid JSON ({exc}); skipped")
            continue
        if report.backup is None:
            continue
        print(f"{path}: backup (readable by you only) at {report.backup}")
        for key, name, backend in report.moved:
            print(f"  {key} -> {name} ({backend})")
        moved += len(report.moved)
    try:
        moved += _import_google_token(store, where.config_dir / "google_token.json")
    except CredentialError as exc:
        print(f"co-kernel secrets import: the Google token: {exc}; left as it was", file=sys.stderr)
        return 2
    if not moved:
        print("No secret values in the settings files: nothing to import.")
    return 0


def _import_google_token(store: Any, path: Path) -> int:
    """Move the token an older `co-kernel google auth` wrote (the default file) into the store."""
    import json

    if not path.is_file() or "google_token" in store.names():
        return 0
    text = path.read_text(encoding="utf-8")
    try:
        if "refresh_token" not in json.loads(text):
            return 0
    except ValueError:
        return 0
    backend = store.set("google_token", text)
    path.unlink()
    print(f"{path}: the Google token -> google_token ({backend}); the file is removed")
    return 1


def add_secrets_commands(sub: Any) -> None:
    """Add ``secrets`` and its subcommands to the ``co-kernel`` parser."""
    p_secrets = sub.add_parser(
        "secrets", help="keep keys and tokens in the OS keyring or an encrypted file"
    )
    secrets_sub = p_secrets.add_subparsers(dest="secrets_command", required=True)
    commands = (
        ("set", _cmd_set, "store a value (read without echo, or from standard input)"),
        ("list", _cmd_list, "names and where each is stored, never values"),
        ("delete", _cmd_delete, "remove a stored value"),
        ("import", _cmd_import, "move secret values out of the settings files into the store"),
    )
    for name, func, text in commands:
        parser = secrets_sub.add_parser(name, help=text)
        if name in ("set", "delete"):
            parser.add_argument("name", help="the secret's name, e.g. openai_api_key")
            parser.add_argument(
                "--for-project",
                action="store_true",
                help="the --project folder's own secret: the only kind its "
                ".co/settings.json `secret:NAME` reads",
            )
        parser.add_argument(
            "--project", default=".", help="the notebook folder (for .co/settings.json)"
        )
        parser.set_defaults(func=func)
