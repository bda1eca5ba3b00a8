"""README command 1, as a new user runs it: `scripts/start.sh`, then the tour and a `!` cell.

`scripts/start.sh` runs as written in a copy of the repository. Its `.venv` reuses this
checkout's virtual environment: a folder whose `bin/` links to ours, with setup.sh's stamp
for the copy, so set-up finds Co installed instead of reinstalling every package (and never
installs the copy into the shared environment).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..support.kernel_harness import CoKernel
from ..support.lab_server import REPO

URL = re.compile(r"http://127\.0\.0\.1:\d+/\S*\?token=\w+")
SKIPPED = {
    ".git", ".venv", "node_modules", "test-artifacts", "dist", "build", "__pycache__", "tour",
}  # fmt: skip


def _docker_answers() -> bool:
    return (
        shutil.which("docker") is not None
        and subprocess.run(["docker", "info"], capture_output=True).returncode == 0
    )


@pytest.fixture
def sandbox_image() -> Iterator[str]:
    """A unique name for the image set-up builds; removed afterwards."""
    name = f"co-sandbox-first-run-{uuid.uuid4().hex[:8]}:bookworm"
    yield name
    if shutil.which("docker"):
        subprocess.run(["docker", "rmi", "-f", name], capture_output=True)


def _copy_of_the_repository(target: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n in SKIPPED or n.endswith("_cache")}

    shutil.copytree(REPO, target, ignore=ignore, symlinks=True)
    venv_bin = target / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    for tool in (REPO / ".venv" / "bin").iterdir():
        (venv_bin / tool.name).symlink_to(tool)
    # What scripts/setup.sh records after installing: the copy counts as installed.
    sources = target / "labextension" / "sources.sha256"
    stamp = (target / "pyproject.toml").read_bytes() + (
        sources.read_bytes() if sources.exists() else b""
    )
    (target / ".venv" / ".co-installed").write_text(hashlib.sha256(stamp).hexdigest()[:16] + "\n")
    return target


def _environment(tmp_path: Path, image: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CO_", "JUPYTER"))}
    env.update(
        CO_HOME=str(tmp_path / "co-home"),
        CO_LOCAL_SANDBOX_IMAGE=image,
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "lab-workspaces"),
    )
    return env


def _setup_sandbox(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """What scripts/start.sh runs for `!` cells."""
    script = str(REPO / "scripts" / "setup-sandbox.sh")
    return subprocess.run([script], env=env, capture_output=True, text=True, timeout=600)


def _wait_for_url(process: subprocess.Popen[str], log: list[str], timeout: float = 180) -> str:
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError("scripts/start.sh exited before printing a URL:\n" + "".join(log))
        log.append(line)
        found = URL.search(line)
        if found:
            return found.group(0)
    raise AssertionError("no URL within the time limit:\n" + "".join(log))


def _get(base: str, path: str, token: str) -> Any:
    """GET a JSON API path; the server prints its URL just before it listens."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base}{path}?token={token}", timeout=30) as response:
                return json.load(response)
        except urllib.error.URLError as exc:
            if not isinstance(exc.reason, ConnectionRefusedError) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.browser
def test_start_sh_opens_the_tour_and_the_tour_runs_in_chromium(
    tmp_path: Path, sandbox_image: str
) -> None:
    copy = _copy_of_the_repository(tmp_path / "co")
    committed = (copy / "notebooks" / "00-tour.ipynb").read_bytes()
    env = _environment(tmp_path, sandbox_image)
    process = subprocess.Popen(
        ["co/scripts/start.sh", "--no-browser", "--ServerApp.port=0", "--ServerApp.ip=127.0.0.1"],
        cwd=tmp_path,  # not the copy's root: the script finds its own folder
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    log: list[str] = []
    try:
        url = _wait_for_url(process, log)
        assert process.poll() is None, "".join(log)
        # The URL it prints opens the tour itself, not the Launcher.
        assert urllib.parse.urlsplit(url).path == "/lab/tree/00-tour.ipynb", url
        base, token = url.split("/", 3)[:3], url.rsplit("token=", 1)[1]
        base_url = "/".join(base)
        specs = _get(base_url, "/api/kernelspecs", token)
        assert "co" in specs["kernelspecs"], specs
        assert specs["kernelspecs"]["co"]["spec"]["display_name"] == "Co"
        tour = _get(base_url, "/api/contents/00-tour.ipynb", token)
        assert tour["type"] == "notebook"
        assert tour["content"]["metadata"]["kernelspec"]["name"] == "co"
        # It opens clean: no recorded output or count, so Run All visibly does something.
        code = [c for c in tour["content"]["cells"] if c["cell_type"] == "code"]
        assert code and all(c["outputs"] == [] for c in code), "the tour opens with outputs"
        assert all(c["execution_count"] is None for c in code)
        # The committed notebook keeps the outputs nbval compares a run with.
        assert any(c.get("outputs") for c in json.loads(committed)["cells"])
        saved = copy / "tour" / "00-tour.ipynb"
        before = saved.read_bytes()
        _run_the_tour(url, tour["content"])
        # Saved as a person saves it: the outputs land in the tour's copy.
        deadline = time.monotonic() + 30
        while saved.read_bytes() == before:
            assert time.monotonic() < deadline, "the tour was not saved in tour/"
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 15)
        process.wait(timeout=30)
        assert process.stdout is not None
        log.append(process.stdout.read())
        process.stdout.close()
    output = "".join(log)
    assert "No such file or directory" not in output, output
    # The tour ran (and saved) in tour/: the committed notebooks are untouched.
    assert (copy / "notebooks" / "00-tour.ipynb").read_bytes() == committed
    assert (copy / "tour" / "00-tour.ipynb").exists()
    assert "ready: the Co kernel is registered" in output, output


def _run_the_tour(url: str, notebook: dict[str, Any]) -> None:
    from ..browser.jupyterlab import chromium_page

    cells = notebook["cells"]
    code_cells = [i for i, c in enumerate(cells) if c["cell_type"] == "code"]
    with chromium_page() as page:
        page.goto(url)
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
        page.wait_for_selector("text=Co | Idle", timeout=120_000)
        page.locator(".jp-Notebook .jp-Cell").first.click()
        for _ in cells:  # Shift+Enter runs a cell (renders Markdown) and moves on
            page.keyboard.press("Shift+Enter")
        last = page.locator(".jp-Notebook .jp-Cell").nth(code_cells[-1])
        expected = f"[{len(code_cells)}]:"
        deadline = time.monotonic() + 120
        while last.locator(".jp-InputPrompt").inner_text().strip() != expected:
            assert time.monotonic() < deadline, "the tour did not finish running"
            time.sleep(0.2)
        # text_content, not inner_text: JupyterLab skips rendering cells scrolled out of
        # view (content-visibility), and a skipped element has no inner text.
        answers = [
            (
                "".join(cells[i]["source"]),
                page.locator(".jp-Notebook .jp-Cell")
                .nth(i)
                .locator(".jp-OutputArea")
                .text_content()
                or "",
            )
            for i in code_cells
        ]
        errors = page.locator(".jp-OutputArea-output[data-mime-type*='stderr']").all_text_contents()
        page.keyboard.press("Control+s")
        page.wait_for_function("() => !document.querySelector('.lm-TabBar-tab.jp-mod-dirty')")
    assert not errors, errors
    assert all(answer.strip() for _, answer in answers), answers
    assert "%model" in dict(answers)["%help"]  # %help lists the magics


@pytest.mark.docker
@pytest.mark.slow
def test_after_set_up_a_bang_cell_runs_in_docker(
    tmp_path: Path, sandbox_image: str, start_kernel: Callable[..., CoKernel]
) -> None:
    if not _docker_answers():
        pytest.skip("no Docker engine answers here")
    env = _environment(tmp_path, sandbox_image)
    done = _setup_sandbox(env)
    assert done.returncode == 0, done.stderr
    settings = json.loads((tmp_path / "co-home" / "config" / "settings.json").read_text())
    assert settings == {"sandbox_image": sandbox_image}
    kernel = start_kernel({"CO_HOME": env["CO_HOME"], "CO_SANDBOX": "auto"})
    result = kernel.execute("!echo hello from the sandbox; cat /etc/debian_version", timeout=180)
    assert result.status == "ok", result.text()
    assert "hello from the sandbox" in result.text()
    assert "host" not in result.stderr.lower(), result.stderr


def test_without_docker_set_up_says_so_in_one_line(tmp_path: Path, sandbox_image: str) -> None:
    """No engine installed: one line naming the fix, never an install (start.sh goes on)."""
    bin_dir = tmp_path / "bin"  # a PATH with the basic tools and no docker, dockerd or apt-get
    bin_dir.mkdir()
    for tool in ("bash", "env", "id", "dirname", "cat", "mkdir", "sha256sum", "cut"):
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    env = _environment(tmp_path, sandbox_image)
    env["PATH"] = str(bin_dir)
    done = _setup_sandbox(env)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "no Docker engine answers, so `!` cells will not run" in lines[0]
    assert "install Docker Engine: https://docs.docker.com/engine/install/" in lines[0]
    assert not (tmp_path / "co-home" / "config" / "settings.json").exists()
