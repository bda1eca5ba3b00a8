"""Workspace trust: what a folder brings stays inert until the person trusts the folder.

A folder gives Co power through files: ``.co/settings.json`` (models, MCP servers, rules,
keys), ``.co/instructions.md`` and ``.co/knowledge/`` (the prompt), ``.co/agents/`` and
``.co/skills/`` (subagents and skills), and the files those settings point at (a replay
script, every file of the folder an MCP server's command can load: ``_server_code``). Until the folder is trusted none of it
applies: the settings' ``after trust`` rows are ignored (``_project.TABLE``) and the
prompt, agents and skills leave the folder's files out. The ``never`` rows stay ignored
after trust too.

Trust is the person's act: a card (notebook), ``y/n`` (console), ``%trust`` or
``co-kernel trust``, which write a record here; or, for headless runs, the setting
``trusted_folders`` in the user's own settings or environment (a project file cannot set
it). A record is kept in the user's data directory, keyed by the folder's real path, and
holds a hash of every file that gives power (``fingerprint``): when any of them is added,
changed or removed, also while a kernel runs, the record stops matching and the folder
is untrusted again until the person looks at what changed (``FolderTrust.changed``). A file
cannot decide its own trust: nothing in the folder is read to decide it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..inert import inert_block, inert_code
from ._private import private_folder
from ._server_code import over_bound_message, server_code

__all__ = [
    "FolderTrust",
    "TrustStatus",
    "describe_asks",
    "fingerprint",
    "folder_trust",
    "forget_folder",
    "narrow_servers",
    "trust_folder",
    "trust_notice",
    "trust_record_path",
    "trust_records",
    "trusted_for_code",
]

TrustStatus = Literal["trusted", "untrusted", "changed", "nothing", "refused"]
"""``nothing``: the folder brings nothing that needs trust; ``refused``: the deployer's
``trust_policy`` is ``never``; ``changed``: trusted once, its files changed since."""

_POWER_DIR = ".co"
_MAX_FILES = 2000
"""Files of ``.co/`` hashed at most (a folder with more is untrusted until it has fewer)."""
_MAX_HASHED = 64 * 1024 * 1024
"""Bytes of one file hashed at most."""
_REPLAY = "replay:"
_RECORD_NAME = "trusted-folders.json"


def trust_record_path() -> Path:
    """Where the person's trust decisions are kept (the user's data directory)."""
    from . import paths

    return paths().data_dir / _RECORD_NAME


_SEEN: dict[str, tuple[tuple[int, int, int, int, int], str]] = {}
"""Path -> (its stat when hashed, the digest): the folder is hashed again before every
cell, and an MCP server's code may be hundreds of files, so a file whose size, times,
inode and device are as they were is not read again. Any write changes ``st_ctime_ns``
(which no program can set back), so a changed file is read again."""


def _digest(path: Path | str) -> str | None:
    """SHA-256 of a regular file's content (links followed); None if it cannot be read.

    Anything else (a FIFO, a device, a link to one) is named, never opened: opening a
    FIFO would block every cell. A file over ``_MAX_HASHED`` bytes counts by size and
    modification time instead of content."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file ({stat.filemode(info.st_mode)})"
    if info.st_size > _MAX_HASHED:
        return f"large file: {info.st_size} bytes, modified {info.st_mtime_ns}"
    key = str(path)
    stamp = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)
    seen = _SEEN.get(key)
    if seen is not None and seen[0] == stamp:
        return seen[1]
    sha = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 16), b""):
                sha.update(chunk)
    except OSError:
        return None
    if len(_SEEN) > 4 * _MAX_FILES:
        _SEEN.clear()
    _SEEN[key] = (stamp, sha.hexdigest())
    return sha.hexdigest()


def _project_servers(settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The project's MCP servers as its settings write them (name -> spec)."""
    servers = settings.get("mcp_servers")
    if not isinstance(servers, dict):
        return {}
    return {str(name): spec for name, spec in servers.items() if isinstance(spec, dict)}


def _named_files(folder: Path, settings: dict[str, Any]) -> list[Path | str]:
    """Files outside ``.co/`` that the folder's settings make Co read or run: a replay
    script (``model: replay:PATH``); MCP servers' code is ``_server_code``'s."""
    named: list[str] = []
    for key in ("model", "summarization_model", "replay_fallback_model"):
        value = settings.get(key)
        if isinstance(value, str) and value.startswith(_REPLAY):
            named.append(value[len(_REPLAY) :])
    root = folder.resolve()
    found: list[Path | str] = []
    for item in named:
        if not item or item.startswith("-"):
            continue
        with contextlib.suppress(OSError, ValueError):
            path = (folder / Path(item).expanduser()).resolve()
            if path.is_relative_to(root) and path.is_file():
                found.append(path)
    return found


def narrow_servers(folder: Path, layer: dict[str, Any]) -> list[str]:
    """Leave out of the (trusted) project ``layer`` each MCP server that loads more files
    from the folder than trust can vouch for; why, one problem each."""
    servers = layer.get("mcp_servers")
    if not isinstance(servers, dict):
        return []
    problems: list[str] = []
    kept: dict[str, Any] = {}
    for name, spec in servers.items():
        code = server_code(folder, spec) if isinstance(spec, dict) else None
        if code is not None and code.over:
            problems.append(over_bound_message(str(name), code))
        else:
            kept[name] = spec
    if problems:
        layer["mcp_servers"] = kept
    return problems


def _project_settings(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / _POWER_DIR / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` that gives power -> the SHA-256 of its content.

    All of ``.co/`` (links followed: a link's target is what Co would read), the files
    its settings name (``_named_files``) and every file of the folder its MCP servers can
    load (``server_code``); a server over the bound counts as one entry that says so (it
    does not start: ``_server_code.over_bound_message``). Paths are relative to the
    folder, with ``/``.
    """
    root = folder.resolve()
    files: dict[str, str] = {}
    base = folder / _POWER_DIR
    if base.is_dir():
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if len(files) >= _MAX_FILES:
                    files["(more files)"] = "too many files to hash"
                    return files
                rel = path.relative_to(folder).as_posix()
                files[rel] = _digest(path) or "unreadable"
    settings = _project_settings(folder)
    named = _named_files(folder, settings)
    for name, spec in _project_servers(settings).items():
        code = server_code(root, spec)
        if code.over:  # it does not start; which files fit under the bound is arbitrary
            files[f"(MCP server {name})"] = "loads too many files to hash"
        else:
            named += sorted(code.files)
    prefix = str(root).rstrip(os.sep) + os.sep
    for path in named:
        # Real paths inside ``root`` (both callers resolve them): a slice, not relative_to,
        # since this runs for hundreds of files before every cell.
        rel = str(path)[len(prefix) :].replace(os.sep, "/")
        if rel not in files:
            files[rel] = _digest(path) or "unreadable"
    return files


@dataclass(frozen=True)
class FolderTrust:
    """Whether a folder's files may act, and why."""

    folder: Path
    """The folder's real path."""
    status: TrustStatus
    files: dict[str, str] = field(default_factory=dict[str, str])
    """The fingerprint of its power-giving files now."""
    changed: list[str] = field(default_factory=list[str])
    """For ``changed``: each file added, changed or removed since the person trusted it."""
    source: str = ""
    """For ``trusted``: how (``your decision of <date>``, ``setting trusted_folders``)."""

    @property
    def trusted(self) -> bool:
        """Whether the folder's files apply (also when it brings nothing)."""
        return self.status in ("trusted", "nothing")

    @property
    def askable(self) -> bool:
        """Whether the person may be asked (the policy allows it and there is something)."""
        return self.status in ("untrusted", "changed")


def _records() -> dict[str, Any]:
    try:
        data = json.loads(trust_record_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    folders = data.get("folders") if isinstance(data, dict) else None
    return folders if isinstance(folders, dict) else {}


def _write_records(folders: dict[str, Any]) -> None:
    path = trust_record_path()
    private_folder(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=".trusted-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"version": 1, "folders": folders}, handle, indent=2, sort_keys=True)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _key(folder: Path) -> str:
    return os.path.realpath(folder)


def _diff(before: dict[str, str], now: dict[str, str]) -> list[str]:
    lines = [f"added {name}" for name in sorted(now.keys() - before.keys())]
    lines += [
        f"changed {name}"
        for name in sorted(before.keys() & now.keys())
        if before[name] != now[name]
    ]
    lines += [f"removed {name}" for name in sorted(before.keys() - now.keys())]
    return lines


def _named_by_setting(folder: Path, names: list[str] | None) -> bool:
    key = _key(folder)
    for name in names or []:
        with contextlib.suppress(OSError, ValueError):
            if os.path.realpath(Path(name).expanduser()) == key:
                return True
    return False


def folder_trust(
    folder: Path, *, trusted_folders: list[str] | None = None, policy: str = "ask"
) -> FolderTrust:
    """The folder's trust now: from the person's record (which must match the files as they
    are) or the user's ``trusted_folders`` setting; never from the folder's own files."""
    real = Path(_key(folder))
    files = fingerprint(real)
    if not files:
        return FolderTrust(real, "nothing")
    if policy == "never":
        return FolderTrust(real, "refused", files)
    if _named_by_setting(real, trusted_folders):
        return FolderTrust(real, "trusted", files, source="setting trusted_folders")
    record = _records().get(str(real))
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
        return FolderTrust(real, "untrusted", files)
    before = {str(k): str(v) for k, v in record["files"].items()}
    if before != files:
        return FolderTrust(real, "changed", files, changed=_diff(before, files))
    when = str(record.get("trusted_at", ""))[:10]
    return FolderTrust(real, "trusted", files, source=f"your decision of {when}".strip())


def trusted_for_code(
    folder: Path, *, trusted_folders: list[str] | None = None, policy: str = "ask"
) -> bool:
    """Whether Python may import the folder's own modules (``%%python``'s ``import mymod``).

    Only by the person's act: a folder that brings no Co files counts as trusted for its
    settings (it has none), but its ``.py`` files are code nobody chose, so here it needs
    the person's record (``%trust``) or the ``trusted_folders`` setting too.
    """
    trust = folder_trust(folder, trusted_folders=trusted_folders, policy=policy)
    if trust.status != "nothing":
        return trust.status == "trusted"
    if policy == "never":
        return False
    return _named_by_setting(trust.folder, trusted_folders) or str(trust.folder) in _records()


def trust_folder(folder: Path, files: dict[str, str] | None = None) -> FolderTrust:
    """The person trusts the folder as its files are now, or as they were shown to them
    (``files``: a file changed since then makes the folder ask again); the new state."""
    real = Path(_key(folder))
    files = fingerprint(real) if files is None else files
    folders = _records()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    folders[str(real)] = {"files": files, "trusted_at": stamp}
    _write_records(folders)
    return FolderTrust(
        real, "trusted" if files else "nothing", files, source=f"your decision of {stamp[:10]}"
    )


def forget_folder(folder: Path) -> bool:
    """The person withdraws trust; whether there was a record."""
    folders = _records()
    found = folders.pop(_key(folder), None) is not None
    if found:
        _write_records(folders)
    return found


def trust_records() -> dict[str, str]:
    """Every folder the person trusted -> when."""
    return {
        name: str(rec.get("trusted_at", ""))
        for name, rec in _records().items()
        if isinstance(rec, dict)
    }


_SHOWN = 120
"""Characters of a value shown in the list of what a folder asks for."""
_FILE_KINDS = (
    ("instructions.md", "instructions added to the model's prompt"),
    ("knowledge", "knowledge added to the model's prompt"),
    ("agents", "subagents the model may delegate to"),
    ("skills", "skills the model may load"),
)


def _shown(value: Any, limit: int | None = _SHOWN) -> str:
    """A value from the folder as one inert code span (a JSON value as JSON), cut to
    ``limit`` characters; None shows it whole."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return inert_code(text, limit=limit)


_NAMES_SHOWN = 12
"""Files of an MCP server's code named in the trust question (the rest counted)."""


def _code_text(folder: Path, server: str, spec: dict[str, Any]) -> str:
    """What a server's command loads from the folder, for the trust question ("" for
    nothing)."""
    code = server_code(folder, spec)
    if code.over:
        return _shown(over_bound_message(server, code), None)
    if not code.files:
        return ""
    root = str(folder.resolve()).rstrip(os.sep) + os.sep
    names = sorted(path[len(root) :].replace(os.sep, "/") for path in code.files)
    shown = ", ".join(_shown(name) for name in names[:_NAMES_SHOWN])
    more = f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
    count = f"{len(names)} file{'s' if len(names) != 1 else ''}"
    return f"It loads {count} from this folder (hashed): {shown}{more}"


def describe_asks(folder: Path, held: dict[str, Any], secret_fields: frozenset[str]) -> list[str]:
    """What the folder would do once trusted, one Markdown list item each (lines after
    the first indented for a ``- `` item): every setting held
    back (each MCP server's command line in full; keys named, never shown) and every file
    that would reach the prompt or the tools."""
    lines: list[str] = []
    for name, value in held.items():
        if name == "mcp_servers" and isinstance(value, dict):
            for server, spec in value.items():
                if not isinstance(spec, dict):
                    continue
                if spec.get("command"):
                    argv = " ".join([str(spec["command"]), *map(str, spec.get("args") or [])])
                    # Whole, however long: what it runs is decided by its end as much as
                    # its start (`… | sh`); a block the card scrolls instead of cutting it.
                    code = _code_text(folder, str(server), spec)
                    lines.append(
                        f"MCP server {_shown(server)} runs the program:\n\n  "
                        + inert_block(argv, indent="  ")
                        + (f"\n\n  {code}" if code else "")
                    )
                else:
                    lines.append(f"MCP server {_shown(server)} at {_shown(spec.get('url'))}")
        elif name in secret_fields:
            lines.append(f"{_shown(name)}: a key of its own (not shown)")
        else:
            lines.append(f"{_shown(name)}: {_shown(value)}")
    base = folder / _POWER_DIR
    for entry, what in _FILE_KINDS:
        path = base / entry
        if path.is_file() or (path.is_dir() and any(path.iterdir())):
            lines.append(f"`.co/{entry}`: {what}")
    return lines


def trust_notice(trust: FolderTrust, held: list[str], user_file: Path, *, can_ask: bool) -> str:
    """What the first cell says about an untrusted folder: what it asks for, what changed
    since the person trusted it, and how to trust it (Markdown)."""
    folder = _shown(str(trust.folder), None)
    if trust.status == "refused":
        return (
            f"This folder ({folder}) has Co settings or files, and your administrator's "
            "`trust_policy` is `never`: Co uses your own settings only."
        )
    lines = []
    if trust.status == "changed":
        lines.append(
            f"**Files changed since you trusted this folder** ({folder}), so its settings "
            "and files are off again until you look and trust it again:"
        )
        lines += [f"- {_shown(change)}" for change in trust.changed]
        lines.append("")
        lines.append("Once trusted, it would bring:")
    else:
        lines.append(
            f"**This folder ({folder}) brings Co settings and files** that act only once you "
            "trust it. Until then Co uses your own settings. Once trusted, it would bring:"
        )
    lines += [f"- {line}" for line in held] or ["- (only files Co reads; none is in use now)"]
    how = (
        "Trust it with the buttons below or `%trust`"
        if can_ask
        else "Trust it with `%trust` in a notebook or `co-kernel trust <folder>`"
    )
    lines.append("")
    lines.append(
        f"{how}; `%trust show` says what is trusted. For runs nobody watches (papermill, "
        f"nbclient) add the folder to `trusted_folders` in your settings ({_shown(str(user_file), None)}) "
        "or to `CO_TRUSTED_FOLDERS`."
    )
    return "\n".join(lines)
