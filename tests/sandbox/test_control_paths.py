"""The sandbox cannot plant power: what Co or git would run or obey on the
host (``.co``, ``.git``) is read-only in the container whether or not it exists yet, in both
workspace modes; copy mode brings back no link leading outside the workspace, no set-uid
bit, no FIFO, and both halves of a hard link.

The subprocess sandbox runs commands on the host as the kernel's user: it protects nothing,
and says so (docs/settings.md, "The sandbox")."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from co_kernel.sandbox import DockerSandbox, SandboxUnavailable

MakeSandbox = Callable[..., DockerSandbox]

TARGETS = (".co/settings.json", ".co/instructions.md", ".git/hooks/pre-commit", ".git/config")

# Each write tried on its own, its folder made first; then the folders moved away and made
# anew, as a command replacing them would.
PLANT = "; ".join(
    [f"mkdir -p {os.path.dirname(t)}; echo PLANTED > {t}" for t in TARGETS]
    + ["mv .co moved-co; mv .git moved-git; mkdir -p .co .git/hooks"]
    + [f"echo PLANTED > {t}" for t in TARGETS]
    + ["echo PLANTED >> .git/config; true"]
)


def _run(sandbox: DockerSandbox, command: str) -> str:
    return asyncio.run(sandbox.run(command, timeout=60)).output


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with a file's content (None for a folder)."""
    found: dict[str, bytes | None] = {}
    for top, dirs, files in os.walk(root):
        for d in dirs:
            found[os.path.relpath(os.path.join(top, d), root)] = None
        for f in files:
            found[os.path.relpath(os.path.join(top, f), root)] = Path(top, f).read_bytes()
    return found


def _prepare(workspace: Path) -> None:
    """A project with Co's settings and instructions and a git repository, writable by all:
    only the sandbox stops a command (when the tests run as root, too)."""
    (workspace / ".co").mkdir()
    (workspace / ".co" / "settings.json").write_text('{"model": "the user\'s"}\n')
    (workspace / ".co" / "instructions.md").write_text("Be careful.\n")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (workspace / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for top, dirs, files in os.walk(workspace):
        for name in dirs:
            os.chmod(os.path.join(top, name), 0o777)
        for name in files:
            os.chmod(os.path.join(top, name), 0o666)


def _refused(out: str, target: str, refused: str) -> bool:
    """Whether writing ``target``, or making its folder, failed with ``refused``."""
    folder = os.path.dirname(target)
    return any(
        refused in line and (target in line or f"\u2018{folder}\u2019" in line)
        for line in out.splitlines()
    )


@pytest.mark.docker
@pytest.mark.parametrize("mode", ["bind", "copy"])
@pytest.mark.parametrize("exist", [True, False], ids=["existing", "missing"])
def test_a_command_cannot_create_or_change_what_co_and_git_obey(
    make_sandbox: MakeSandbox, workspace: Path, mode: str, exist: bool
) -> None:
    if exist:
        _prepare(workspace)
    before = _snapshot(workspace)
    sandbox = make_sandbox(workspace_mode=mode)

    out = _run(sandbox, PLANT)

    refused = "Read-only file system" if mode == "bind" else "Permission denied"
    for target in TARGETS:
        if mode == "bind" and exist and target == ".co/settings.json":
            continue  # a secret file: masked by an empty read-only /dev/null, writes vanish
        assert _refused(out, target, refused), (target, out)
    assert "moved-co" not in os.listdir(workspace) and "moved-git" not in os.listdir(workspace)
    assert _snapshot(workspace) == {
        **before,
        **({} if exist or mode == "copy" else {".co": None, ".git": None}),  # mount points
    }
    if exist:  # the container sees them, read-only
        assert "Be careful." in _run(sandbox, "cat .co/instructions.md")
        assert "bare = false" in _run(sandbox, "cat .git/config")

    asyncio.run(sandbox.close())
    assert _snapshot(workspace) == before  # the mount points went with the container


@pytest.mark.docker
def test_a_mount_point_stays_while_another_kernels_container_uses_it(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    """Removing an empty ``.co`` another container mounts would unmount it there: the
    last one out removes it."""
    first, second = make_sandbox(), make_sandbox()
    _run(first, "true")
    _run(second, "true")

    asyncio.run(first.close())
    assert (workspace / ".co").is_dir() and (workspace / ".git").is_dir()
    out = _run(second, "echo PLANTED > .co/settings.json")
    assert "Read-only file system" in out
    assert not (workspace / ".co" / "settings.json").exists()

    asyncio.run(second.close())
    assert os.listdir(workspace) == []


@pytest.mark.docker
def test_a_git_repository_made_on_the_host_is_read_only_in_the_container(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    """``.git`` replaced on the host after the container was made (an empty mount point
    before): the container is recreated so the new one is covered too."""
    statuses: list[str] = []
    sandbox = make_sandbox(on_status=statuses.append)
    _run(sandbox, "true")

    os.rmdir(workspace / ".git")
    (workspace / ".git").mkdir(mode=0o777)
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (workspace / ".git" / "config").chmod(0o666)  # only the read-only mount stops a write

    out = _run(sandbox, "cat .git/config; echo PLANTED >> .git/config")
    assert "bare = false" in out and ".git/config: Read-only file system" in out
    assert (workspace / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert any(".co or .git in the workspace changed" in s for s in statuses), statuses
    asyncio.run(sandbox.close())
    assert (workspace / ".git" / "config").exists()  # the user's, not a mount point: kept


@pytest.mark.docker
def test_a_control_path_that_is_a_link_is_refused_in_bind_mode(
    make_sandbox: MakeSandbox, workspace: Path, tmp_path: Path
) -> None:
    """A mount over a link covers its target, not the link, which the command could
    replace: the sandbox refuses to start and says what to do."""
    (tmp_path / "elsewhere").mkdir()
    (workspace / ".co").symlink_to(tmp_path / "elsewhere")

    with pytest.raises(SandboxUnavailable, match="sandbox_workspace = copy"):
        _run(make_sandbox(workspace_mode="bind"), "true")
    assert not (workspace / ".git").exists()  # nothing left behind when refused


# -- copy mode: what comes back ------------------------------------------------------------


@pytest.mark.docker
def test_links_leading_outside_are_not_copied_back_and_are_reported(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    sandbox = make_sandbox(workspace_mode="copy")

    out = _run(
        sandbox,
        "mkdir sub && ln -s /etc/passwd pw && ln -s ../../.. sub/up && ln -s .. sub/here && "
        "ln -s sub/here/../.. twice && ln -s sub inside && ln -s b0/.. a0 && ln -s . b0",
    )

    for link, target in [
        ("pw", "/etc/passwd"),
        ("sub/up", "../../.."),
        ("twice", "sub/here/../.."),
        ("a0", "b0/.."),  # inside when it came back, outside once b0 did
    ]:
        assert not os.path.lexists(workspace / link)
        assert f"the link {link} -> {target} leads outside the workspace" in out
    assert os.readlink(workspace / "sub" / "here") == ".."
    assert os.readlink(workspace / "inside") == "sub"


@pytest.mark.docker
def test_set_uid_and_set_gid_bits_are_not_copied_back(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    sandbox = make_sandbox(workspace_mode="copy")

    _run(sandbox, "cp /bin/sh shell && chmod 6755 shell && ls -l shell")

    mode = (workspace / "shell").stat().st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID)
    assert stat.S_IMODE(mode) == 0o755
    assert (workspace / "shell").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.docker
def test_both_halves_of_a_hard_link_come_back_as_a_pair(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    sandbox = make_sandbox(workspace_mode="copy")

    _run(sandbox, "echo shared > one && mkdir d && ln one d/two")

    one, two = workspace / "one", workspace / "d" / "two"
    assert one.read_text() == two.read_text() == "shared\n"
    assert os.path.samefile(one, two)
    # Unchanged, they stay as they are; changed through one half, both follow.
    _run(sandbox, "true")
    assert os.path.samefile(one, two)
    _run(sandbox, "echo more >> d/two")
    assert one.read_text() == "shared\nmore\n" and os.path.samefile(one, two)


@pytest.mark.docker
def test_a_fifo_is_skipped_with_a_note(make_sandbox: MakeSandbox, workspace: Path) -> None:
    sandbox = make_sandbox(workspace_mode="copy")

    out = _run(sandbox, "mkfifo pipe && echo ok > plain.txt")

    assert not os.path.lexists(workspace / "pipe")
    assert "[copy mode: pipe is a FIFO; not copied back]" in out
    assert (workspace / "plain.txt").read_text() == "ok\n"
