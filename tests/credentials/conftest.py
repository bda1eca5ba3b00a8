"""Fixtures of the credential store's tests: a real Secret Service (gnome-keyring) on a private
D-Bus session, `co-kernel secrets` as a person runs it, and a proxy that shows which
`Authorization` header reaches the model server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from co_kernel.config._credentials import CREDENTIAL_NAME
from co_kernel.replay import ScriptedModelServer

REPO = Path(__file__).resolve().parents[2]
KEYRING_PASSWORD = b"co-test-keyring-password"
# Variables that would let a child process reach this machine's own keyring or Co files.
_OUTSIDE = ("DBUS_SESSION_BUS_ADDRESS", "PYTHON_KEYRING_BACKEND", "XDG_RUNTIME_DIR")


def clean_env(co_home: Path, **extra: str) -> dict[str, str]:
    """A child environment with no Co settings, no provider keys, no keyring and no D-Bus
    but what is given."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CO_") and k not in _OUTSIDE and not CREDENTIAL_NAME.search(k)
    }
    env.update(
        CO_HOME=str(co_home),
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p),
    )
    env.update(extra)
    return env


def secrets_cli(
    env: dict[str, str], *args: str, value: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`co-kernel secrets ARGS` with ``value`` on standard input (not a terminal)."""
    return co_kernel_cli(env, "secrets", *args, value=value)


def co_kernel_cli(
    env: dict[str, str], *args: str, value: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`co-kernel ARGS` as a person runs it, in a folder of its own."""
    return subprocess.run(
        [sys.executable, "-m", "co_kernel.cli", *args],
        input=value if value is not None else "",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def all_bytes(*roots: Path) -> bytes:
    """Every file under these folders, concatenated (to grep for a plaintext secret)."""
    chunks = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                chunks.append(path.read_bytes())
    return b"\n".join(chunks)


# -- a real Secret Service -------------------------------------------------------------------

_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


@dataclass
class SecretService:
    """gnome-keyring's Secret Service, unlocked, on a D-Bus session of its own."""

    env: dict[str, str]
    """HOME, XDG dirs and DBUS_SESSION_BUS_ADDRESS that reach it (and nothing else)."""
    keyrings: Path
    """Where gnome-keyring keeps its (encrypted) keyring files."""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.env["DBUS_SESSION_BUS_ADDRESS"]

    def lookup(self, name: str) -> list[str]:
        """The values stored for Co under ``name``, asked of the Secret Service directly."""
        import secretstorage
        from jeepney.io.blocking import open_dbus_connection

        with open_dbus_connection(self.address) as connection:
            items = secretstorage.search_items(
                connection, {"service": "co-kernel", "username": name}
            )
            return [item.get_secret().decode() for item in items]


def _owned(address: str, name: str) -> bool:
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import open_dbus_connection

    try:
        with open_dbus_connection(address) as connection:
            reply = connection.send_and_get_reply(message_bus.NameHasOwner(name), timeout=5)
    except (OSError, ConnectionError):
        return False
    return bool(reply.body[0])


@pytest.fixture
def secret_service(tmp_path: Path) -> Iterator[SecretService]:
    for program in ("dbus-daemon", "gnome-keyring-daemon"):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed (scripts/test.sh installs it)")
    root = tmp_path / "desktop"
    home, run = root / "home", root / "run"
    home.mkdir(parents=True)
    run.mkdir(mode=0o700)
    config = root / "bus.conf"
    # No service folders: nothing else is started on demand (an activated gnome-keyring
    # would be a second, locked one).
    config.write_text(_BUS_CONFIG.format(socket=run / "bus"))
    env = clean_env(
        root / "co-home",
        HOME=str(home),
        XDG_RUNTIME_DIR=str(run),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    del env["CO_HOME"]  # each test gives the Co home of its own
    service = SecretService(env, home / ".local" / "share" / "keyrings")
    bus = subprocess.Popen(
        ["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile", "--print-address=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # "Failed to set fd limit" when not root, and the like
        env=env,
    )
    service.processes.append(bus)
    try:
        assert bus.stdout is not None
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().decode().strip()
        daemon = subprocess.Popen(
            ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        service.processes.append(daemon)
        assert daemon.stdin is not None
        daemon.stdin.write(KEYRING_PASSWORD)  # --unlock reads the login password to EOF
        daemon.stdin.close()
        deadline = time.monotonic() + 60
        while not _owned(env["DBUS_SESSION_BUS_ADDRESS"], "org.freedesktop.secrets"):
            assert daemon.poll() is None, "gnome-keyring-daemon exited"
            assert time.monotonic() < deadline, "the Secret Service did not come up"
            time.sleep(0.05)
        yield service
    finally:
        for process in reversed(service.processes):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if bus.stdout is not None:
            bus.stdout.close()


# -- which key reaches the model -------------------------------------------------------------


class HeaderProxy:
    """An HTTP proxy in front of the scripted model server that records the `Authorization`
    header of every request (the scripted server records bodies only)."""

    def __init__(self, upstream: ScriptedModelServer) -> None:
        self.authorizations: list[str | None] = []
        upstream_root = f"http://127.0.0.1:{upstream.port}"
        seen = self.authorizations

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                seen.append(self.headers.get("Authorization"))
                request = urllib.request.Request(
                    upstream_root + self.path,
                    data=body,
                    method=self.command,
                    headers={"Content-Type": self.headers.get("Content-Type", "application/json")},
                )
                try:
                    with urllib.request.urlopen(request, timeout=120) as response:
                        status, data = response.status, response.read()
                        ctype = response.headers.get("Content-Type", "application/json")
                except urllib.error.HTTPError as exc:
                    status, data = exc.code, exc.read()
                    ctype = exc.headers.get("Content-Type", "application/json")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _forward

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@pytest.fixture
def header_proxy(model_server: ScriptedModelServer) -> Iterator[HeaderProxy]:
    proxy = HeaderProxy(model_server)
    yield proxy
    proxy.close()
