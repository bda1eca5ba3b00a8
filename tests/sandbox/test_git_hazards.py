"""The sandbox cannot write what git on the host runs, and bind mode leaves nothing behind
that copy mode would not bring back.

Git on the host runs hooks and config from every repository in the workspace, not only the
top-level ``.git``: a nested one's (``vendor/lib/.git``), the folder a ``.git`` file's
``gitdir:`` names, the folder ``core.hooksPath`` names. In bind mode they are read-only in
the container and one a command makes is moved out of the workspace; in copy mode nothing
of them comes back. After a bind-mode command set-id bits are cleared and FIFOs and links
leading outside are removed, each reported, as copy mode does when it copies back."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from co_kernel.config import paths
from co_kernel.sandbox import DockerSandbox

from .conftest import SANDBOX_UID

MakeSandbox = Callable[..., DockerSandbox]

HOOK = "#!/bin/sh\necho PLANTED\n"
WALK_LIMIT = 50_000
"""Files and folders the sandbox's walks look at (docs/settings.md, "The sandbox")."""


def _run(sandbox: DockerSandbox, command: str) -> str:
    return asyncio.run(sandbox.run(command, timeout=60)).output


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    """Git on the host, as the person runs it (the workspace may belong to the sandbox's
    uid, which git would refuse as another user's when the tests run as root)."""
    argv = ["git", "-c", "safe.directory=*", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _open_to_all(root: Path) -> None:
    """Writable by everyone: only the sandbox stops a write (also when tests run as root)."""
    for top, _, files in os.walk(root):
        os.chmod(top, 0o777)
        for name in files:
            path = os.path.join(top, name)
            if not os.path.islink(path):
                os.chmod(path, 0o777 if "hooks" in top else 0o666)


def _repositories(workspace: Path) -> None:
    """A project whose ``.git`` is a file (``gitdir: .gitstore``) whose config names a hooks
    folder (``.githooks``) and includes ``shared.gitconfig``, which names a filter script
    (``tools/clean.sh``), with a nested repository in ``vendor/lib``."""
    assert _git("init", "-q", "--bare", str(workspace / ".gitstore")).returncode == 0
    assert _git("--git-dir", str(workspace / ".gitstore"), "config", "core.bare", "false")
    _git("--git-dir", str(workspace / ".gitstore"), "config", "core.hooksPath", ".githooks")
    _git("--git-dir", str(workspace / ".gitstore"), "config", "include.path", "../shared.gitconfig")
    (workspace / "shared.gitconfig").write_text('[filter "x"]\n\tclean = tools/clean.sh\n')
    (workspace / "tools").mkdir()
    (workspace / "tools" / "clean.sh").write_text("#!/bin/sh\ncat\n")
    (workspace / ".git").write_text("gitdir: .gitstore\n")
    (workspace / ".githooks").mkdir()
    (workspace / ".githooks" / "post-checkout").write_text("#!/bin/sh\n")
    (workspace / "vendor" / "lib").mkdir(parents=True)
    assert _git("init", "-q", str(workspace / "vendor" / "lib")).returncode == 0
    _open_to_all(workspace)


PLANT = "; ".join(
    [
        f"printf '{HOOK}' > vendor/lib/.git/hooks/pre-commit",
        "chmod +x vendor/lib/.git/hooks/pre-commit",
        "printf '[core]\\n\\tfsmonitor = ./fsmonitor.sh\\n' >> vendor/lib/.git/config",
        f"printf '{HOOK}' > .gitstore/hooks/pre-commit",
        "printf '[core]\\n\\tfsmonitor = ./fsmonitor.sh\\n' >> .gitstore/config",
        f"printf '{HOOK}' > .githooks/pre-commit",
        f"printf '{HOOK}' > .githooks/post-checkout",
        "printf '[core]\\n\\tfsmonitor = ./fsmonitor.sh\\n' >> shared.gitconfig",
        f"printf '{HOOK}' > tools/clean.sh",
        "true",
    ]
)


def _snapshot(root: Path) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for top, dirs, files in os.walk(root):
        for d in dirs:
            found[os.path.relpath(os.path.join(top, d), root)] = None
        for f in files:
            found[os.path.relpath(os.path.join(top, f), root)] = Path(top, f).read_bytes()
    return found


@pytest.mark.docker
@pytest.mark.parametrize("mode", ["bind", "copy"])
def test_a_command_cannot_plant_hooks_or_config_that_host_git_runs(
    make_sandbox: MakeSandbox, workspace: Path, mode: str
) -> None:
    _repositories(workspace)
    before = _snapshot(workspace)
    sandbox = make_sandbox(workspace_mode=mode)

    out = _run(sandbox, PLANT)

    for planted in [
        "vendor/lib/.git/hooks/pre-commit",
        ".gitstore/hooks/pre-commit",
        ".githooks/pre-commit",
    ]:
        assert not (workspace / planted).exists(), (planted, out)
    assert (workspace / ".githooks" / "post-checkout").read_text() == "#!/bin/sh\n"
    for where in ["vendor/lib", str(workspace)]:  # as git on the host reads them
        assert _git("-C", str(workspace / where), "config", "core.fsmonitor").stdout == ""
    hooks_path = _git("-C", str(workspace), "config", "core.hooksPath")
    assert hooks_path.stdout == ".githooks\n", hooks_path
    refused = "Read-only file system" if mode == "bind" else "Permission denied"  # root's
    for target in [
        ".git/hooks/pre-commit",
        ".gitstore/config",
        ".githooks/pre-commit",
        "shared.gitconfig",
        "tools/clean.sh",
    ]:
        assert f"{target}: {refused}" in out, (target, out)
    asyncio.run(sandbox.close())
    assert _snapshot(workspace) == before


@pytest.mark.docker
@pytest.mark.parametrize("mode", ["bind", "copy"])
def test_a_repository_the_command_makes_never_reaches_host_git(
    make_sandbox: MakeSandbox, workspace: Path, mode: str
) -> None:
    """``git init sub`` with a hook, a bare-looking folder, a ``.git`` made by hand: host git
    finds none of them in the workspace; each is reported."""
    sandbox = make_sandbox(workspace_mode=mode)

    # What `git init sub` and `git init --bare bare.git` make (the image has no git).
    init = "mkdir -p {0}/hooks {0}/objects {0}/refs && echo 'ref: refs/heads/main' > {0}/HEAD"
    out = _run(
        sandbox,
        f"{init.format('sub/.git')} && printf '{HOOK}' > sub/.git/hooks/pre-commit && "
        "printf '[core]\\n\\tfsmonitor = ./fsmonitor.sh\\n' > sub/.git/config && "
        "mkdir -p x/.git/hooks && echo hook > x/.git/hooks/post-checkout && "
        f"{init.format('bare.git')} && echo hook > bare.git/hooks/pre-receive && "
        "echo kept > sub/notes.txt",
    )

    assert (workspace / "sub" / "notes.txt").read_text() == "kept\n"
    for made in ["sub/.git", "x/.git", "bare.git"]:
        assert not os.path.lexists(workspace / made), (made, out)
    assert _git("-C", str(workspace / "sub"), "config", "core.fsmonitor").stdout == ""
    if mode == "bind":
        for made in ["sub/.git", "x/.git", "bare.git"]:
            assert f"[sandbox: the command made or changed {made}, which git" in out
        quarantined = paths().data_dir / "sandbox-quarantine"
        hooks = list(quarantined.glob("*/sub__.git/hooks/pre-commit"))
        assert [h.read_text() for h in hooks] == [HOOK]  # kept for the person, out of reach
    else:
        for made in ["sub/.git", "x/.git", "bare.git"]:
            assert f"[copy mode: {made} is what git or Co on the host reads or runs" in out


@pytest.mark.docker
def test_bind_mode_clears_set_id_bits_and_removes_fifos_and_links_leading_outside(
    make_sandbox: MakeSandbox, workspace: Path, tmp_path: Path
) -> None:
    (tmp_path / "data").mkdir()
    (workspace / "mine").symlink_to(tmp_path / "data")  # the person's own: left alone
    (workspace / "old").mkdir()
    (workspace / "old" / "tool").write_text("#!/bin/sh\n")
    for path in [workspace / "old", workspace / "old" / "tool"]:
        os.chown(path, SANDBOX_UID, SANDBOX_UID)
        path.chmod(0o755)
    sandbox = make_sandbox(workspace_mode="bind")
    assert _run(sandbox, "true") == ""

    out = _run(
        sandbox,
        "cp /bin/sh shell && chmod 6755 shell && cp /bin/sh gid && chmod 2755 gid && "
        "mkfifo pipe && mkdir sub && ln -s /etc/passwd pw && ln -s ../../.. sub/up && "
        f"ln -s {tmp_path} out && ln -s sub inside && ln -s .. sub/here && "
        "chmod u+s old/tool && mkdir -p new/deep && ln -s /etc new/deep/etc",
    )

    for name in ["shell", "gid", "old/tool"]:
        mode = (workspace / name).stat().st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID) and stat.S_IMODE(mode) == 0o755
        assert f"[sandbox: {name} was set-uid or set-gid; bit cleared]" in out
    assert not os.path.lexists(workspace / "pipe")
    assert "[sandbox: pipe is a FIFO; removed]" in out
    for link, target in [("pw", "/etc/passwd"), ("sub/up", "../../.."), ("out", str(tmp_path))]:
        assert not os.path.lexists(workspace / link)
        assert f"[sandbox: the link {link} -> {target} leads outside the workspace; removed]" in out
    assert os.readlink(workspace / "inside") == "sub"
    assert os.readlink(workspace / "sub" / "here") == ".."
    assert os.readlink(workspace / "mine") == str(tmp_path / "data")
    assert "mine" not in out
    assert not os.path.lexists(workspace / "new" / "deep" / "etc")
    assert "[sandbox: the link new/deep/etc -> /etc leads outside the workspace" in out

    # A later command that leaves nothing says nothing.
    assert _run(sandbox, "echo quiet") == "quiet\n"


@pytest.mark.docker
def test_a_folder_moved_in_the_container_is_still_looked_at(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    sandbox = make_sandbox(workspace_mode="bind")
    _run(sandbox, "mkdir -p a/b && true")

    out = _run(sandbox, "mv a moved && mkfifo moved/b/pipe && ln -s / moved/root")

    assert not os.path.lexists(workspace / "moved" / "b" / "pipe")
    assert not os.path.lexists(workspace / "moved" / "root")
    assert "[sandbox: moved/b/pipe is a FIFO; removed]" in out
    # and the looks after that still see what changes
    out = _run(sandbox, "ln -s /etc moved/b/etc")
    assert "[sandbox: the link moved/b/etc -> /etc leads outside the workspace" in out


@pytest.mark.docker
def test_a_repository_made_on_the_host_between_commands_is_read_only_for_the_next(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    """The person clones into the workspace while the kernel runs: the next command meets
    the new repository read-only, and it stays the person's (nothing is moved)."""
    statuses: list[str] = []
    sandbox = make_sandbox(workspace_mode="bind", on_status=statuses.append)
    _run(sandbox, "mkdir -p vendor")

    assert _git("init", "-q", str(workspace / "vendor" / "new")).returncode == 0
    _open_to_all(workspace / "vendor")
    out = _run(sandbox, f"printf '{HOOK}' > vendor/new/.git/hooks/pre-commit; echo done")

    assert "vendor/new/.git/hooks/pre-commit: Read-only file system" in out
    assert not (workspace / "vendor" / "new" / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / "vendor" / "new" / ".git" / "HEAD").exists()
    assert "moved out of the workspace" not in out
    assert any("recreating the sandbox" in s for s in statuses), statuses


@pytest.mark.docker
def test_a_workspace_too_big_to_check_whole_says_so(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    for d in range(WALK_LIMIT // 1000 + 1):
        folder = workspace / f"d{d:03}"
        folder.mkdir()
        for f in range(1000):
            (folder / f"f{f}").touch()
    statuses: list[str] = []
    sandbox = make_sandbox(workspace_mode="bind", on_status=statuses.append)

    out = _run(sandbox, "echo ran")

    said = f"holds more than {WALK_LIMIT} files and folders: the sandbox checks git repositories"
    assert out.startswith("ran\n") and said in out, out
    assert any(said in s for s in statuses), statuses
    assert _run(sandbox, "echo again") == "again\n"  # said once
