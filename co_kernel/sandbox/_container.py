"""The sandbox container's life: created on first use, reused, recreated, removed.

The container (`co-sandbox-<session>`) is created on first use and reused. It runs as a
non-root user with every capability dropped, no-new-privileges, a read-only root filesystem
with a tmpfs /tmp (HOME), memory/CPU/pids limits, no network unless asked for, and only the
mounts of ``_mounts``. It is recreated before a command when a mount has stopped covering what
it was put over, or when its pids limit is used up; containers of this user's kernels that
died without cleaning up are removed when one is created; ``close`` removes it.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import socket
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import docker  # type: ignore[import-untyped]
import docker.errors  # type: ignore[import-untyped]

from ..exceptions import SandboxUnavailable
from ._bind_checks import BindChecks
from ._mounts import WORKDIR, SandboxMounts, Secrets, _controls_in, _secret_paths, _secrets_in
from ._protocol import StatusCallback, process_start

__all__ = ["SandboxContainer"]

log = logging.getLogger(__name__)

_HOST = socket.gethostname()


def _user_name(uid: int) -> str:
    """The login name of ``uid`` (the uid itself where there is none, as in a container
    started with an arbitrary ``--user``)."""
    import pwd  # Unix only, as the engine's socket is

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _owner_alive(labels: dict[str, str], boot: str) -> bool:
    """Whether the kernel process that labelled a container still runs on this host."""
    try:
        pid = int(labels["co.pid"])
    except (KeyError, ValueError):
        return True  # not ours to judge
    if boot and labels.get("co.boot") and labels["co.boot"] != boot:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by someone else
    started = labels.get("co.pid_start")
    now = process_start(pid)
    return not (started and now and started != now)


_GIT_TRUST = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": WORKDIR,
}


def _default_user() -> str:
    uid, gid = os.getuid(), os.getgid()
    return "1000:1000" if uid == 0 else f"{uid}:{gid}"


def _engine_unreachable(mode: str, error: object) -> SandboxUnavailable:
    auto = " (sandbox mode auto never falls back to running on the host)" if mode == "auto" else ""
    return SandboxUnavailable(
        f"Docker is not reachable: {error}{auto}. Start it (`sudo systemctl start docker`, "
        "or run `dockerd` in the background; scripts/start-docker.sh does both), or opt in to "
        "running commands unsandboxed on the host: set sandbox = subprocess in "
        "your own settings (~/.config/co/settings.json; a project file cannot) or "
        "CO_SANDBOX=subprocess."
    )


def _docker_client(**kwargs: Any) -> Any:
    """``docker.from_env``, without leaving a socket open when no engine answers.

    The client asks the engine for its API version as it is built; when the engine is down,
    docker-py's socket for that request stays open until garbage collection. Collecting now
    closes it at once (its ResourceWarning says only that).
    """
    try:
        return docker.from_env(**kwargs)
    except docker.errors.DockerException as exc:
        failure = docker.errors.DockerException(str(exc))
    # Out of the handler: inside it, the first error's traceback would still hold the socket.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    raise failure


class SandboxContainer(SandboxMounts):
    """The container ``DockerSandbox`` runs commands in: its settings and its life."""

    backend: str
    mode: str
    image: str
    session_id: str
    kernel_id: str
    network: str
    memory: str
    cpus: float
    pids_limit: int
    max_timeout: float
    user: str
    container_name: str
    _copy_lock: threading.Lock
    _client: Any
    _container_id: str | None
    _lock: threading.Lock

    def describe(self) -> dict[str, object]:
        info: dict[str, object] = {
            "backend": self.backend,
            "mode": self.mode,
            "sandboxed": True,
            "engine_reachable": False,
            "engine_version": None,
            "image": self.image,
            "image_present": None,
            "container": {
                "name": self.container_name,
                "id": None,
                "status": "not created",
                "running": False,
            },
            "network": self.network,
            "user": self.user,
            "workspace": str(self.workspace),
            "workspace_mode": self.workspace_mode,
            "read_only_root": True,
            "limits": {
                "memory": self.memory,
                "cpus": self.cpus,
                "pids": self.pids_limit,
                "max_timeout": self.max_timeout,
            },
        }
        try:
            client = _docker_client(timeout=3)
        except docker.errors.DockerException as e:
            info["engine_error"] = str(e)
            return info
        try:
            info["engine_reachable"] = bool(client.ping())
            info["engine_version"] = client.version().get("Version")
            try:
                client.images.get(self.image)
                info["image_present"] = True
            except docker.errors.ImageNotFound:
                info["image_present"] = False
            try:
                c = client.containers.get(self._container_id or self.container_name)
                info["container"] = {
                    "name": c.name,
                    "id": c.short_id,
                    "status": c.status,
                    "running": c.status == "running",
                }
            except docker.errors.NotFound:
                pass
        except docker.errors.DockerException as e:
            info["engine_error"] = str(e)
        finally:
            client.close()
        return info

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                self._client = _docker_client()
            except docker.errors.DockerException as e:
                raise _engine_unreachable(self.mode, e) from e
        return self._client

    def _ensure_container(self, status: StatusCallback) -> str:
        with self._lock:
            bound = self._copy is None and self._container_id is not None
            reason = None
            if bound and self._secrets_changed():
                # A mask covers the inode it was mounted over: a secret file replaced by
                # rename (a token refresh, an editor's save) or new since would be readable.
                reason = "Co's secret files in the workspace changed"
            elif bound and _controls_in(self.workspace.resolve()) != self._controls:
                # .co or .git replaced or removed on the host: the new one would be writable.
                reason = ".co or .git in the workspace changed"
            elif bound and self._checks is not None and (changed := self._checks.changed()):
                reason = changed
            if reason is not None:
                status(f"{reason}; recreating the sandbox…")
                with contextlib.suppress(docker.errors.DockerException):
                    self._get_client().api.remove_container(self._container_id, force=True, v=True)
                self._container_id = None
            if self._container_id is None:
                self._container_id = self._create_container(self._get_client(), status)
            return self._container_id

    def _create_container(self, client: Any, status: StatusCallback) -> str:
        workspace = self.workspace.resolve()
        if not workspace.is_dir():
            raise SandboxUnavailable(f"The sandbox workspace {workspace} is not a directory.")
        try:
            self._ensure_image(client, status)
            self._reap_orphans(client)
            hidden: Secrets = {}
            checks = None
            if self._copy is None:
                hidden = _secrets_in(workspace, _secret_paths(workspace, self.settings, walk=True))
                self._place_controls(workspace)
                checks = BindChecks(workspace, hidden)
                if checks.cut:
                    status(checks.cut_message(checks.cut))
            controls = _controls_in(workspace, mark=True) if self._copy is None else {}
            container = client.containers.create(
                self.image,
                ["sleep", "infinity"],
                name=self.container_name,
                labels=self._labels(),
                detach=True,
                init=True,  # reaps the zombies of killed process trees
                user=self.user,
                hostname="co-sandbox",
                working_dir=WORKDIR,
                # In copy mode root owns .git: git must trust it to read it.
                environment={"HOME": "/tmp", **({} if self._copy is None else _GIT_TRUST)},
                mounts=self._mounts(workspace, hidden, controls, checks),
                network_mode=self.network,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=True,
                tmpfs={"/tmp": f"rw,nosuid,nodev,size={self.memory}"},
                mem_limit=self.memory,
                memswap_limit=self.memory,
                nano_cpus=int(self.cpus * 1e9),
                pids_limit=self.pids_limit,
                ipc_mode="private",
            )
        except docker.errors.APIError as e:
            raise SandboxUnavailable(
                f"Could not create the sandbox container from {self.image}: {e.explanation or e}"
            ) from e
        except docker.errors.DockerException as e:
            raise _engine_unreachable(self.mode, e) from e
        try:
            container.start()
        except docker.errors.DockerException as e:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True, v=True)
            raise SandboxUnavailable(
                f"Could not start the sandbox container from {self.image}: {e}"
            ) from e
        self._hidden = hidden
        self._controls = controls
        if self._checks is not None:
            self._checks.close()
        self._checks = checks
        if checks is not None:
            checks.start()
        if self._copy is not None:
            with self._copy_lock:
                self._copy.reset()
        return str(container.id)

    def _labels(self) -> dict[str, str]:
        pid = os.getpid()
        return {
            "co.kernel": "1",
            "co.session": self.session_id,
            "co.kernel_id": self.kernel_id,
            "co.pid": str(pid),
            "co.pid_start": process_start(pid),
            "co.host": _HOST,
            "co.boot": _boot_id(),
            # Whose kernel: on a shared engine (JupyterHub users on one host) a kernel
            # reaps only its own user's leftovers.
            "co.uid": str(os.getuid()),
            "co.user": _user_name(os.getuid()),
        }

    def _ensure_image(self, client: Any, status: StatusCallback) -> None:
        try:
            client.images.get(self.image)
            return
        except docker.errors.ImageNotFound:
            pass
        status(f"Pulling {self.image}…")
        layers: dict[str, tuple[int, int]] = {}
        last = time.monotonic()
        try:
            for event in client.api.pull(self.image, stream=True, decode=True):
                if "error" in event:
                    raise SandboxUnavailable(self._pull_failed(event["error"]))
                detail = event.get("progressDetail") or {}
                if event.get("id") and detail.get("total"):
                    layers[event["id"]] = (detail.get("current", 0), detail["total"])
                if time.monotonic() - last > 0.5 and layers:
                    done = sum(c for c, _ in layers.values()) / 1e6
                    total = sum(t for _, t in layers.values()) / 1e6
                    status(f"Pulling {self.image}… {done:.0f}/{total:.0f} MB")
                    last = time.monotonic()
            client.images.get(self.image)
        except docker.errors.DockerException as e:
            raise SandboxUnavailable(self._pull_failed(e)) from e
        status(f"Pulled {self.image}.")

    def _pull_failed(self, error: object) -> str:
        return (
            f"The sandbox image {self.image} is not present and pulling it failed: {error}. "
            f"Pull it (`docker pull {self.image}`), build a local one "
            "(scripts/build-sandbox-image.sh builds co-sandbox-test:bookworm), "
            "or set sandbox_image in your own settings (~/.config/co/settings.json; a project "
            "file cannot) to an image this engine has."
        )

    def _reap_orphans(self, client: Any) -> None:
        """Remove containers of this user's kernels on this host that died without cleaning up."""
        boot = _boot_id()
        mine = self._labels()
        filters = {"label": ["co.kernel=1", f"co.uid={mine['co.uid']}"]}
        # ignore_removed: the listing inspects each container in turn, and one that another
        # kernel removes meanwhile is simply gone (it failed the whole creation before).
        for c in client.containers.list(all=True, filters=filters, ignore_removed=True):
            labels = c.labels
            if labels.get("co.host") != _HOST:
                continue  # another machine or pid namespace: its pids mean nothing here
            ours = all(labels.get(k) == mine[k] for k in ("co.pid", "co.pid_start", "co.boot"))
            if not ours and _owner_alive(labels, boot):
                if c.name == self.container_name:
                    raise SandboxUnavailable(
                        f"The container name {self.container_name} is taken by a live kernel "
                        f"(pid {labels.get('co.pid')}); session ids must be unique."
                    )
                continue
            if ours and c.name != self.container_name:
                continue  # another sandbox of this same process
            log.info("removing orphaned sandbox container %s", c.name)
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                c.remove(force=True, v=True)

    def _forget_container(self, api: Any, container_id: str) -> None:
        with self._lock:
            if self._container_id == container_id:
                self._container_id = None
        with contextlib.suppress(docker.errors.DockerException):
            api.remove_container(container_id, force=True, v=True)

    def _close_sync(self) -> None:
        if self._checks is not None:
            self._checks.close()
            self._checks = None
        with self._lock:
            container_id, self._container_id = self._container_id, None
            client, self._client = self._client, None
        if client is None:
            return
        try:
            if container_id is not None:
                with contextlib.suppress(docker.errors.NotFound):
                    client.api.remove_container(container_id, force=True, v=True)
            self._drop_placeholders(client)
        except docker.errors.DockerException:
            log.warning("could not remove sandbox container %s", container_id, exc_info=True)
        finally:
            client.close()

    def _replace_if_exhausted(self) -> bool:
        """Remove the container if its pids limit is used up (by processes nothing could
        tell were a command's); the next command gets a fresh one."""
        with self._lock:
            container_id, client = self._container_id, self._client
        if container_id is None or client is None:
            return False
        try:
            stats = client.api.stats(container_id, stream=False, one_shot=True)
        except docker.errors.DockerException:
            return False
        current = (stats.get("pids_stats") or {}).get("current") or 0
        if current < self.pids_limit - 2:
            return False
        log.warning("%s has no pids left; removing it", self.container_name)
        self._forget_container(client.api, container_id)
        return True
