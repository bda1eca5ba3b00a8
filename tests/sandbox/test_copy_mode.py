"""The Docker sandbox's copy mode: no workspace mount; the workspace is
copied in before each command and the command's changes copied back after it."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from co_kernel.config import Settings
from co_kernel.sandbox import DockerSandbox, SandboxUnavailable
from co_kernel.sandbox._copy import CONTROL_PATHS
from co_kernel.sandbox._mounts import _workspace_mode

# Prints every file under /workspace with its content, as JSON, and every folder.
DUMP = (
    "python3 -c 'import json,os\n"
    "t={}\n"
    'for top,ds,fs in os.walk("."):\n'
    "  for d in ds: t[os.path.relpath(os.path.join(top,d))]=None\n"
    "  for f in fs: t[os.path.relpath(os.path.join(top,f))]=open(os.path.join(top,f)).read()\n"
    'print("TREE"+json.dumps(t,sort_keys=True))\''
)


def _host_tree(root: Path) -> dict[str, str | None]:
    tree: dict[str, str | None] = {}
    for top, dirs, files in os.walk(root):
        for d in dirs:
            tree[os.path.relpath(os.path.join(top, d), root)] = None
        for f in files:
            tree[os.path.relpath(os.path.join(top, f), root)] = Path(top, f).read_text()
    return tree


def _container_tree(sandbox: DockerSandbox) -> dict[str, str | None]:
    result = asyncio.run(sandbox.run(DUMP, timeout=60))
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("TREE"))
    tree = json.loads(line[4:])
    for name in CONTROL_PATHS:  # the empty read-only stand-ins for those the host lacks
        if tree.get(name, "") is None and not (sandbox.workspace / name).exists():
            del tree[name]
    return tree


def _run(sandbox: DockerSandbox, command: str) -> str:
    result = asyncio.run(sandbox.run(command, timeout=60))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.docker
def test_both_sides_agree_after_each_command(
    make_sandbox: Callable[..., DockerSandbox], workspace: Path
) -> None:
    """Files created, changed and deleted on either side, folders too, end up the same on
    both; the container's /workspace is its own tmpfs, not a mount of the host's."""
    (workspace / "keep.txt").write_text("from host\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "edit.txt").write_text("v1\n")
    (workspace / "gone.txt").write_text("delete me in the container\n")
    sandbox = make_sandbox(workspace_mode="copy")
    assert _container_tree(sandbox) == _host_tree(workspace)

    _run(
        sandbox,
        "echo made > new.txt && echo v2 > sub/edit.txt && rm gone.txt && "
        "mkdir -p deep/er && echo x > deep/er/f.txt && mount | grep ' /workspace ' | grep -q tmpfs",
    )
    assert (workspace / "new.txt").read_text() == "made\n"
    assert (workspace / "sub" / "edit.txt").read_text() == "v2\n"
    assert not (workspace / "gone.txt").exists()
    assert (workspace / "deep" / "er" / "f.txt").read_text() == "x\n"
    assert _container_tree(sandbox) == _host_tree(workspace)

    # The host side changes: the next command sees it.
    (workspace / "new.txt").write_text("host changed it, same size?\n")
    (workspace / "keep.txt").unlink()
    (workspace / "sub" / "added.txt").write_text("host added\n")
    out = _run(sandbox, "cat new.txt sub/added.txt; ls")
    assert "host changed it" in out and "host added" in out and "keep.txt" not in out
    assert _container_tree(sandbox) == _host_tree(workspace)

    # A folder deleted in the container goes on the host too.
    _run(sandbox, "rm -r deep && printf 'same' > sub/edit.txt")
    assert not (workspace / "deep").exists()
    assert _container_tree(sandbox) == _host_tree(workspace)
    assert sandbox.describe()["workspace_mode"] == "copy"


@pytest.mark.docker
def test_an_interrupted_command_leaves_both_sides_agreeing(
    make_sandbox: Callable[..., DockerSandbox], workspace: Path
) -> None:
    """Cancelled mid-command (an interrupt): what it wrote before is copied back, and the
    next command works on the same files."""
    sandbox = make_sandbox(workspace_mode="copy")

    async def interrupt() -> None:
        started = asyncio.Event()

        def seen(stream: str, text: str) -> None:
            if "started" in text:
                started.set()

        task = asyncio.create_task(
            sandbox.run(
                "echo half > partial.txt; echo started; sleep 60", timeout=120, on_output=seen
            )
        )
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupt())
    assert (workspace / "partial.txt").read_text() == "half\n"
    assert "half" in _run(sandbox, "cat partial.txt")
    assert _container_tree(sandbox) == _host_tree(workspace)


@pytest.mark.docker
def test_a_workspace_over_the_limit_is_refused_clearly(
    make_sandbox: Callable[..., DockerSandbox], workspace: Path
) -> None:
    (workspace / "big.bin").write_bytes(b"x" * 5000)
    sandbox = make_sandbox(workspace_mode="copy", copy_limit_mb=0.004)

    with pytest.raises(SandboxUnavailable, match="sandbox_copy_limit_mb"):
        asyncio.run(sandbox.run("ls", timeout=60))

    (workspace / "big.bin").write_bytes(b"x" * 100)
    assert "big.bin" in _run(sandbox, "ls")
    # In the container the workspace cannot grow past the limit either.
    result = asyncio.run(sandbox.run("head -c 10000 /dev/zero > huge.bin", timeout=60))
    assert result.exit_code != 0
    assert "No space left" in result.output


@pytest.mark.docker
def test_protected_files_never_reach_the_container_nor_are_overwritten(
    make_sandbox: Callable[..., DockerSandbox], workspace: Path
) -> None:
    (workspace / ".co").mkdir()
    (workspace / ".co" / "settings.json").write_text('{"k": "SECRET-SETTINGS"}\n')
    (workspace / ".env").write_text("KEY=SECRET-ENV\n")
    (workspace / "creds").mkdir()
    (workspace / "creds" / "sa.json").write_text("SECRET-FOLDER\n")
    (workspace / "tok.json").write_text("SECRET-TOKEN\n")
    (workspace / "plain.txt").write_text("visible\n")
    settings = Settings(google_token_path=workspace / "tok.json",
                        google_client_secrets=workspace / "creds")  # fmt: skip
    sandbox = make_sandbox(workspace_mode="copy", settings=settings)

    out = _run(sandbox, "cat plain.txt; ls -AR; grep -r SECRET . || true")
    assert "visible" in out and "SECRET" not in out
    assert ".env" not in out and "tok.json" not in out and "sa.json" not in out

    # What the container writes at those paths never lands on the host (.co is read-only
    # there: see test_control_paths.py).
    _run(sandbox, "echo FAKE > .env && echo FAKE > tok.json && mkdir -p creds && "
                  "echo FAKE > creds/sa.json && { echo FAKE > .co/settings.json || true; }")  # fmt: skip
    assert (workspace / ".env").read_text() == "KEY=SECRET-ENV\n"
    assert (workspace / "tok.json").read_text() == "SECRET-TOKEN\n"
    assert (workspace / ".co" / "settings.json").read_text() == '{"k": "SECRET-SETTINGS"}\n'
    assert (workspace / "creds" / "sa.json").read_text() == "SECRET-FOLDER\n"


@pytest.mark.docker
def test_a_command_cannot_create_a_protected_file_that_does_not_exist_yet(
    make_sandbox: Callable[..., DockerSandbox], workspace: Path
) -> None:
    """The token file a setting names, absent on the host: one the command writes there
    (a planted token) stays in the container."""
    settings = Settings(google_token_path=workspace / "tok.json",
                        google_client_secrets=workspace / "cs.json")  # fmt: skip
    sandbox = make_sandbox(workspace_mode="copy", settings=settings)

    _run(sandbox, "echo PLANTED > tok.json && echo PLANTED > cs.json && echo ok > fine.txt")

    assert not (workspace / "tok.json").exists() and not (workspace / "cs.json").exists()
    assert (workspace / "fine.txt").read_text() == "ok\n"


@pytest.mark.docker
def test_links_are_copied_as_links_never_followed(
    make_sandbox: Callable[..., DockerSandbox], workspace: Path, tmp_path: Path
) -> None:
    """A host link to a file outside the workspace goes in as a link (not the file's
    content), and a link the command makes comes back as a link (one that leads outside
    the workspace does not: test_control_paths.py)."""
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE-CONTENT\n")
    (workspace / "out").symlink_to(outside)
    (workspace / "in.txt").write_text("inside\n")
    sandbox = make_sandbox(workspace_mode="copy")

    out = _run(sandbox, "readlink out; cat out 2>&1 || true; mkdir d && ln -s ../in.txt d/made")

    assert str(outside) in out and "OUTSIDE-CONTENT" not in out
    assert os.readlink(workspace / "d" / "made") == "../in.txt"
    assert os.readlink(workspace / "out") == str(outside)
    assert outside.read_text() == "OUTSIDE-CONTENT\n"


@pytest.mark.docker
def test_the_workspace_permission_hint_is_for_bind_mode_only(
    make_sandbox: Callable[..., DockerSandbox], workspace: Path
) -> None:
    """In copy mode the container's workspace is its own, writable whatever the host
    folder's mode: a "permission denied" there is not the host folder's doing."""
    command = "echo 'touch: x: Permission denied' >&2; exit 1"
    workspace.chmod(0o555)
    try:
        bind = asyncio.run(make_sandbox(workspace_mode="bind").run(command, timeout=60))
        copy = asyncio.run(make_sandbox(workspace_mode="copy").run(command, timeout=60))
    finally:
        workspace.chmod(0o755)
    assert "is not writable by uid" in bind.output
    assert "is not writable by uid" not in copy.output


NAMES = ("a.txt", "b.txt", "d/c.txt", "d/e.txt")
CONTENT = st.text(alphabet="xy", min_size=2, max_size=2) | st.just("")  # same sizes: mtimes lie
HOST_OP = st.tuples(st.sampled_from(NAMES), st.none() | CONTENT)  # None: delete
CONTAINER_OP = st.tuples(st.sampled_from(NAMES), st.none() | CONTENT)


def _container_command(ops: list[tuple[str, str | None]]) -> str:
    parts = ["mkdir -p d"]
    for name, content in ops:
        parts.append(f"rm -f {name}" if content is None else f"printf '{content}' > {name}")
    return " && ".join(parts)


@pytest.mark.docker
def test_any_mix_of_changes_on_both_sides_ends_in_agreement(
    make_sandbox: Callable[..., DockerSandbox], workspace: Path
) -> None:
    """Property: after host changes then a command's changes (creates, rewrites of the same
    size, deletes), host and container hold the same files; one sandbox across examples,
    so each starts from the state the last one left."""
    (workspace / "d").mkdir()
    sandbox = make_sandbox(workspace_mode="copy")

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(HOST_OP, max_size=3), st.lists(CONTAINER_OP, min_size=1, max_size=3))
    def check(host_ops: list[tuple[str, str | None]], ops: list[tuple[str, str | None]]) -> None:
        for name, content in host_ops:
            if content is None:
                (workspace / name).unlink(missing_ok=True)
            else:
                (workspace / name).write_text(content)
        _run(sandbox, _container_command(ops))
        assert _container_tree(sandbox) == _host_tree(workspace)

    check()


def test_auto_copies_only_for_a_remote_engine() -> None:
    assert _workspace_mode("auto", "tcp://docker.example:2376") == "copy"
    assert _workspace_mode("auto", "ssh://me@engine") == "copy"
    assert _workspace_mode("auto", "unix:///var/run/docker.sock") == "bind"
    assert _workspace_mode("auto", "") == "bind"
    assert _workspace_mode("bind", "tcp://x:2375") == "bind"
    assert _workspace_mode("copy", "") == "copy"
    with pytest.raises(ValueError, match="sandbox_workspace must be one of"):
        _workspace_mode("mount", "")
