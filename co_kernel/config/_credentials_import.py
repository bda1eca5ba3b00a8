"""`co-kernel secrets import`: secret values move out of settings files into the store.

Each file that holds one is first copied, byte for byte, to a backup readable by its owner
only. Backups go to the top of Co's config dir under a name with ``settings`` in it, which
the files tools, the sandbox mask and the shell classifier already protect (a backup beside
a project's ``.co/settings.json`` would sit in the workspace, readable by Co's tools).

A top-level secret setting is removed from the file (an empty secret setting is looked up
under its own name); an MCP env or header value becomes ``""`` (looked up as
``mcp_servers.<server>.<key>``). When the store already holds a different value under that
name (the user and the project file hold different keys), the value is stored under the
first free ``<name>-2``, ``<name>-3``, ... and the file says ``"secret:<that name>"``, so
what each file means does not change. A project file's values go to that project's own
namespace (``project_secret_name``), the only entries a project file can read.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._credentials import SECRET_REF, Backend, CredentialStore, plain_secrets, write_private
from ._project import project_secret_name

__all__ = ["ImportReport", "import_settings_file"]


@dataclass
class ImportReport:
    """What importing one settings file did (names and places, never values)."""

    path: Path
    """The settings file."""
    backup: Path | None = None
    """Its backup (0600), None when the file held no secret value."""
    moved: list[tuple[str, str, Backend]] = field(default_factory=list)
    """(key in the file, entry name, backend) per value moved."""


def _backup_path(path: Path, config_dir: Path, user_file: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    if path == user_file:
        return config_dir / f"settings.json.backup-{stamp}"
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]
    return config_dir / f"project-settings-{path.parent.parent.name}-{digest}.json.backup-{stamp}"


def _free_name(store: CredentialStore, name: str, value: str) -> str:
    """``name`` if it is free or holds this value, else the first free ``name-N``."""
    for candidate in [name, *(f"{name}-{n}" for n in range(2, 1000))]:
        entry = store.get(candidate)
        if entry is None or entry[0] == value:
            return candidate
    raise RuntimeError(f"no free secret name like {name}")  # pragma: no cover


def import_settings_file(
    path: Path,
    store: CredentialStore,
    *,
    config_dir: Path,
    user_file: Path,
    secret_field: Any,
    project: Path | None = None,
) -> ImportReport:
    """Move the secret values of one settings file into the store; rewrite the file.

    A ``project`` folder's file keeps its values in that project's namespace (the only
    entries it can read) and says ``"secret:NAME"`` for each top-level one."""
    report = ImportReport(path)
    try:
        original = path.read_bytes()
    except FileNotFoundError:
        return report
    data = json.loads(original)
    if not isinstance(data, dict):
        return report
    found = list(plain_secrets(data, secret_field))
    if not found:
        return report
    report.backup = _backup_path(path, config_dir, user_file)
    write_private(report.backup, original)
    for where, own, value in found:
        base = own if project is None else project_secret_name(project, own)
        name = _free_name(store, base, value)
        backend = store.set(name, value)
        # As the file names it: in a project file, NAME of the project's namespace.
        named = own + name[len(base) :]
        replacement = "" if name == base else f"{SECRET_REF}{named}"
        if project is not None and len(where) == 1:
            replacement = f"{SECRET_REF}{named}"
        holder = data
        for part in where[:-1]:
            holder = holder[part]
        if len(where) == 1 and not replacement:
            del holder[where[-1]]
        else:
            holder[where[-1]] = replacement
        report.moved.append((".".join(where), name, backend))
    mode = path.stat().st_mode & 0o777
    tmp = path.with_name(f".{path.name}.import-tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return report
