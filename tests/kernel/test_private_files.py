"""Every file Co keeps for a person (config, data, cache) is theirs alone: another user of
the host reads none of it, also when the home is open to all (Debian's ``useradd`` makes
homes 0755) and also files an older Co left readable.

The other user is real: a process that runs as ``nobody`` (uid 65534) and tries to read.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from co_kernel.replay import ScriptedModelServer

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="reading as another user needs root")

NOBODY = 65534
TOKEN = "mcp-token-5d1e0a"


@pytest.fixture
def open_home() -> Iterator[Path]:
    """A home every user may enter and list, as Debian's useradd makes it."""
    home = Path(tempfile.mkdtemp(prefix="co-open-home-"))
    home.chmod(0o755)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _as_nobody(path: Path) -> subprocess.CompletedProcess[str]:
    """``path`` read (a file) or listed (a folder) by another user of the host."""

    def become_nobody() -> None:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    program = ["ls", "-a"] if path.is_dir() else ["cat"]
    return subprocess.run(
        [*program, str(path)],
        preexec_fn=become_nobody,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _assert_private(co_home: Path) -> list[Path]:
    """Co's folders (config, data, cache: CO_HOME's, as platformdirs' elsewhere) and
    everything in them are their owner's only; returns the files."""
    folders = [co_home / name for name in ("config", "data", "cache")]
    entries = [entry for folder in folders for entry in (folder, *folder.rglob("*"))]
    for path in entries:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        # Python writes an MCP server's byte-code cache with the umask's modes, inside a
        # folder Co made 0700: private through it, and tightened at the next start.
        cached = "mcp-pycache" in path.relative_to(co_home).parts[:-1]
        if not cached:
            assert stat.S_IMODE(info.st_mode) & 0o077 == 0, f"{path}: {oct(info.st_mode)}"
        read = _as_nobody(path)
        assert read.returncode != 0 and "Permission denied" in read.stderr, (path, read.stderr)
    return [p for p in entries if p.is_file() and not p.is_symlink()]


def _wait_for(path: Path, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and text in path.read_text(errors="replace")):
        assert time.monotonic() < deadline, f"{path} never held {text!r}"
        time.sleep(0.1)


def test_files_co_writes_are_unreadable_by_another_user(
    start_kernel, model_server: ScriptedModelServer, open_home: Path, workspace: Path
) -> None:
    co_home = open_home / "co"
    config = co_home / "config"
    config.mkdir(parents=True, mode=0o700)
    # An MCP server of the person's whose stderr prints a token, as the one found did.
    leak = f"import sys; sys.stderr.write({TOKEN!r} + '\\n'); sys.stderr.flush()"
    server = {"command": sys.executable, "args": ["-c", leak]}
    settings = config / "settings.json"
    settings.write_text(json.dumps({"mcp_servers": {"leaky": server}}))
    settings.chmod(0o600)
    model_server.extend([{"text": "Noted."}])
    kernel = start_kernel({"CO_HOME": str(co_home)}, fork=False, trusted=False)
    assert kernel.execute("remember that I like tea", timeout=120).status == "ok"
    log = co_home / "cache" / "mcp" / "leaky.log"
    _wait_for(log, TOKEN)
    assert log in _assert_private(co_home)
    # The person's trust decisions, and the folder's modules importable from then on.
    assert "You trust" in kernel.execute("%trust", timeout=60).text()
    kernel.shutdown()

    files = {p.relative_to(co_home).as_posix() for p in _assert_private(co_home)}
    expected = {
        "cache/mcp/leaky.log",
        "data/sessions.db",
        "data/history.db",
        "data/telemetry.db",
        "data/trusted-folders.json",
    }
    assert expected <= files, files


def test_files_an_older_co_left_readable_are_tightened_at_start(
    start_kernel, open_home: Path, tmp_path: Path
) -> None:
    co_home = open_home / "co"
    old_log = co_home / "cache" / "mcp" / "old-server.log"
    old_log.parent.mkdir(parents=True)
    old_log.write_text(f"{TOKEN}\n")
    (co_home / "config").mkdir()
    (co_home / "config" / "settings.json").write_text("{}")
    skill = co_home / "config" / "skills" / "tidy" / "run.sh"
    skill.parent.mkdir(parents=True)
    skill.write_text("#!/bin/sh\necho tidy\n")
    for path in (*co_home.rglob("*"), co_home):
        path.chmod(0o755 if path.is_dir() or path == skill else 0o644)
    # A link in Co's folder to a file elsewhere: the file it names is not Co's to change.
    elsewhere = tmp_path / "shared-notes.txt"
    elsewhere.write_text("mine\n")
    elsewhere.chmod(0o644)
    (co_home / "cache" / "notes").symlink_to(elsewhere)
    assert _as_nobody(old_log).returncode == 0  # readable by all before

    kernel = start_kernel({"CO_HOME": str(co_home)}, fork=False)
    assert kernel.execute("%%python\nprint('started')", timeout=60).stdout == "started\n"

    _assert_private(co_home)
    assert stat.S_IMODE(old_log.stat().st_mode) == 0o600
    assert stat.S_IMODE(skill.stat().st_mode) == 0o700  # still the owner's to run
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o644
