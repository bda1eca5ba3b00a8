"""A real JupyterHub on 127.0.0.1 with Linux users made for the test.

The hub runs as root with its defaults where docs/deploying.md leaves them: PAM logs the
users in (passwords set with chpasswd; no network), LocalProcessSpawner starts each
user's single-user server as that user (setuid, the user's home as cwd), and
configurable-http-proxy (npm) routes ``/user/<name>/`` to it. Co is found the way the
guide says: installed in the environment that runs the single-user server (this
checkout's venv, whose kernelspec and server-extension config are in its prefix).
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from ..support.lab_server import stop_process
from ..support.net import free_port

SANDBOX_IMAGE = os.environ.get("CO_TEST_SANDBOX_IMAGE", "co-sandbox-test:bookworm")


@dataclass(frozen=True)
class LinuxUser:
    """A login made for the test (``useradd``), removed at the end."""

    name: str
    password: str
    uid: int
    gid: int
    home: Path

    def run(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run a command as this user (its groups, its home), the way a login does."""
        return subprocess.run(argv, text=True, capture_output=True, **self.popen_kwargs(), **kwargs)

    def popen_kwargs(self) -> dict[str, Any]:
        groups = [g.gr_gid for g in grp.getgrall() if self.name in g.gr_mem]
        env = {
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
        }
        return {
            "user": self.uid,
            "group": self.gid,
            "extra_groups": groups,
            "env": env,
            "cwd": self.home,
        }


@contextlib.contextmanager
def linux_users(base: Path, count: int, *, groups: list[str]) -> Iterator[list[LinuxUser]]:
    """``count`` new Linux users with homes under ``base``, deleted afterwards (also on failure).

    Homes get useradd's defaults (Debian: the umask's 0755), so what keeps one user out of
    another's Co data is Co's own modes, not the home's.
    """
    prefix = f"coh{secrets.token_hex(3)}"
    made: list[str] = []
    try:
        users = []
        for n in range(count):
            name = f"{prefix}{chr(ord('a') + n)}"
            home = base / name
            argv = ["useradd", "--create-home", "--home-dir", str(home), "--user-group"]
            argv += ["--shell", "/bin/bash", "--groups", ",".join(groups), name]
            subprocess.run(argv, check=True, capture_output=True, text=True)
            made.append(name)
            password = secrets.token_urlsafe(12)
            subprocess.run(
                ["chpasswd"],
                input=f"{name}:{password}\n",
                check=True,
                capture_output=True,
                text=True,
            )
            entry = pwd.getpwnam(name)
            users.append(LinuxUser(name, password, entry.pw_uid, entry.pw_gid, home))
        yield users
    finally:
        for name in made:
            subprocess.run(["userdel", "--force", "--remove", name], capture_output=True)
            with contextlib.suppress(KeyError):
                grp.getgrnam(name)
                subprocess.run(["groupdel", name], capture_output=True)


def single_user_env(prefix: Path) -> Path | None:
    """The environment the users' servers and kernels run from; returns its Python.

    docs/deploying.md installs Co into the environment that runs the single-user server,
    which every user must be able to run. This checkout's venv may be built on an
    interpreter under root's home (pyenv), which other users cannot run; so the users get
    a venv of the system's Python of the same version that sees the venv's packages (Co
    among them, editable), with Co's kernelspec and server-extension config in its
    prefix as ``co-kernel install --sys-prefix`` and the wheel put them. None when the
    system has no such Python.
    """
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = next(
        (p for p in (f"/usr/bin/{version}", f"/usr/local/bin/{version}") if os.path.isfile(p)),
        None,
    )
    if system is None or os.stat(system).st_mode & 0o001 == 0:
        return None
    subprocess.run([system, "-m", "venv", "--without-pip", str(prefix)], check=True)
    python = prefix / "bin" / "python"
    site_packages = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    # site.addsitedir, not a bare path: the venv's own .pth files (Co's editable install) run.
    Path(site_packages, "co_test_env.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    shutil.copytree(Path(sys.prefix, "etc", "jupyter"), prefix / "etc" / "jupyter")
    subprocess.run(
        [str(python), "-m", "co_kernel.cli", "install", "--sys-prefix"],
        check=True,
        capture_output=True,
    )
    prefix.chmod(0o755)
    return python


HUB_CONFIG = """
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.pid_file = {proxy_pid!r}
c.JupyterHub.db_url = {db_url!r}
c.JupyterHub.cookie_secret_file = {cookie_secret!r}
c.JupyterHub.pid_file = {hub_pid!r}
c.Authenticator.allowed_users = {users!r}
c.Spawner.cmd = [{python!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
# docs/deploying.md, section 2: site-wide defaults through the spawner's environment.
c.Spawner.environment = {environment!r}
"""


@dataclass
class Hub:
    """A running hub, reached through its proxy at ``url``."""

    url: str
    """``http://127.0.0.1:PORT/`` (the proxy)."""
    base: Path
    """Where its config, database and log are."""
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM: the hub stops the users' servers (cleanup_servers) and the proxy."""
        stop_process(self.process, 60)
        proxy_pid = self.base / "proxy.pid"
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(proxy_pid.read_text()), 15)


@contextlib.contextmanager
def running_hub(
    base: Path, users: list[LinuxUser], python: Path, environment: dict[str, str]
) -> Iterator[Hub]:
    """Start JupyterHub for ``users`` and wait until its proxy answers; stop it afterwards."""
    proxy = shutil.which("configurable-http-proxy")
    if proxy is None:
        raise RuntimeError(
            "configurable-http-proxy is not installed: `npm install -g configurable-http-proxy` "
            "(scripts/test.sh does)"
        )
    base.mkdir(parents=True, exist_ok=True)
    ports: set[int] = set()
    while len(ports) < 3:  # the proxy, the hub, the proxy's API: three different ports
        ports.add(free_port())
    port, hub_port, proxy_api_port = ports
    config = base / "jupyterhub_config.py"
    config.write_text(
        HUB_CONFIG.format(
            port=port,
            hub_port=hub_port,
            proxy_api_port=proxy_api_port,
            proxy_pid=str(base / "proxy.pid"),
            db_url=f"sqlite:///{base / 'jupyterhub.sqlite'}",
            cookie_secret=str(base / "cookie_secret"),
            hub_pid=str(base / "hub.pid"),
            users={u.name for u in users},
            python=str(python),
            environment=environment,
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CO_", "JUPYTER"))}
    env["PATH"] = os.pathsep.join([str(Path(proxy).parent), env.get("PATH", "")])
    log_path = base / "hub.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)],
            cwd=base,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    hub = Hub(f"http://127.0.0.1:{port}/", base, process, log_path)
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"JupyterHub exited early:\n{hub.log()[-4000:]}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(hub.url + "hub/api/", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"JupyterHub did not answer in 90 s:\n{hub.log()[-4000:]}")
            time.sleep(0.3)
        yield hub
    finally:
        hub.stop()


@dataclass
class HubLogin:
    """One user logged in to the hub: their own API token, their server's URL."""

    hub: Hub
    user: LinuxUser
    token: str

    @property
    def server_url(self) -> str:
        return f"{self.hub.url}user/{self.user.name}/"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def hub_api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(
            method, f"{self.hub.url}hub/api/{path}", headers=self.headers(), timeout=60, **kwargs
        )

    def server_api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """A request to the user's single-user server, through the proxy."""
        return requests.request(
            method, self.server_url + path, headers=self.headers(), timeout=60, **kwargs
        )

    def start_server(self, timeout: float = 120) -> None:
        """Ask the hub to spawn the user's server and wait until it is ready."""
        reply = self.hub_api("POST", f"users/{self.user.name}/server")
        assert reply.status_code in (201, 202), f"{reply.text}\n{self.hub.log()[-4000:]}"
        deadline = time.monotonic() + timeout
        while True:
            model = self.hub_api("GET", f"users/{self.user.name}").json()
            server = model.get("servers", {}).get("", {})
            if server.get("ready"):
                return
            if not server.get("pending") and not server.get("ready"):
                raise RuntimeError(
                    f"{self.user.name}'s server did not start:\n{self.hub.log()[-4000:]}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.user.name}'s server not ready in {timeout} s")
            time.sleep(0.5)


def log_in(hub: Hub, user: LinuxUser) -> HubLogin:
    """Log in through the hub's login form (PAM checks the password), then make a token
    for the API with the session cookie, as the hub's token page does."""
    session = requests.Session()
    page = session.get(hub.url + "hub/login", timeout=30)
    assert page.status_code == 200, page.text
    xsrf = session.cookies.get("_xsrf", path="/hub/")
    reply = session.post(
        hub.url + "hub/login",
        data={"username": user.name, "password": user.password, "_xsrf": xsrf},
        allow_redirects=False,
        timeout=60,
    )
    assert reply.status_code == 302, f"login of {user.name} refused: {reply.status_code}"
    # The hub ties its XSRF token to the login session: a new one comes with the login.
    xsrf = session.cookies.get("_xsrf", path="/hub/")
    made = session.post(
        hub.url + f"hub/api/users/{user.name}/tokens",
        json={"note": "co hub test", "expires_in": 3600},
        headers={"X-XSRFToken": xsrf or ""},
        timeout=30,
    )
    assert made.status_code == 201, made.text
    return HubLogin(hub, user, made.json()["token"])
