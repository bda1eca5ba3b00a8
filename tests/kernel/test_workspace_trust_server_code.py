"""Workspace trust covers the code a trusted project MCP server runs from the folder.

A folder's MCP server is launched as a person's settings would launch it (`python srv.py`,
`python -m pkg.server`, `node server.js`, `./serve`), and the files it loads from the folder
are real Python or JavaScript that leave a marker when they run. After the person trusts
the folder, a change to a module the server imports (from the host, or by a `!` cell in
the Docker sandbox) makes the next cell ask again, and the changed code does not run
until the person trusts the folder again.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.kernel.test_workspace_trust import _appears, _records
from tests.sandbox.conftest import SANDBOX_UID, TEST_IMAGE, docker_client  # noqa: F401 - fixture

SERVER = """\
import helper
from mcp.server.fastmcp import FastMCP

app = FastMCP("tools")


@app.tool()
def word() -> str:
    return helper.WORD


app.run()
"""
HELPER = "open('{marker}', 'w').close()\nWORD = 'v1'\n"


def _settings(workspace: Path, server: dict[str, object]) -> None:
    co = workspace / ".co"
    co.mkdir(exist_ok=True)
    (co / "settings.json").write_text(json.dumps({"mcp_servers": {"tools": server}}))


def _changed_notice(text: str, name: str) -> bool:
    return "Files changed since you trusted this folder" in text and f"changed {name}" in text


def test_a_change_to_a_module_the_server_script_imports_asks_again(
    start_kernel, workspace: Path, co_home: Path
):
    (workspace / "srv.py").write_text(SERVER)
    helper = workspace / "helper.py"
    helper.write_text(HELPER.format(marker="started"))
    _settings(workspace, {"command": sys.executable, "args": ["srv.py"]})
    kernel = start_kernel(trusted=False)
    first = kernel.execute("%python 1", mode="headless")
    assert "It loads 2 files from this folder" in first.text(), first.text()
    assert "helper.py" in first.text()
    kernel.execute("%trust")
    [(_, record)] = _records(co_home).items()
    assert {"srv.py", "helper.py"} <= set(record["files"])
    assert "helper.py" in kernel.execute("%trust show").text()
    tools = kernel.execute("%mcp", timeout=60)
    assert _appears(workspace / "started"), tools.text()

    helper.write_text(HELPER.format(marker="changed-ran"))
    after = kernel.execute("%python 1", mode="headless")
    assert _changed_notice(after.text(), "helper.py"), after.text()
    assert not _appears(workspace / "changed-ran", timeout=3)
    # A new kernel does not start the changed server either.
    again = start_kernel(trusted=False).execute("%python 1", mode="headless")
    assert _changed_notice(again.text(), "helper.py"), again.text()
    assert not _appears(workspace / "changed-ran", timeout=3)
    # Once the person trusts it again, the changed code runs.
    kernel.execute("%trust")
    kernel.execute("%python 1")
    assert _appears(workspace / "changed-ran")


def test_an_executable_python_script_in_the_folder_covers_its_imports(
    start_kernel, workspace: Path, co_home: Path
):
    serve = workspace / "serve"
    serve.write_text(f"#!{sys.executable}\n{SERVER}")
    serve.chmod(0o755)
    (workspace / "helper.py").write_text(HELPER.format(marker="started"))
    _settings(workspace, {"command": "./serve"})
    kernel = start_kernel(trusted=False)
    kernel.execute("%trust")
    kernel.execute("%python 1")
    assert _appears(workspace / "started")
    (workspace / "helper.py").write_text(HELPER.format(marker="changed-ran"))
    fresh = start_kernel(trusted=False).execute("%python 1", mode="headless")
    assert _changed_notice(fresh.text(), "helper.py"), fresh.text()
    assert not _appears(workspace / "changed-ran", timeout=3)


@pytest.mark.skipif(not Path("/usr/bin/node").exists(), reason="node is not installed")
def test_a_change_to_a_file_the_node_server_requires_asks_again(
    start_kernel, workspace: Path, co_home: Path
):
    server = workspace / "server"
    server.mkdir()
    (server / "package.json").write_text('{"name": "tools", "version": "1.0.0"}')
    (server / "index.js").write_text("require('./lib.js');\n")
    lib = server / "lib.js"
    lib.write_text("require('fs').writeFileSync('started', '');\n")
    _settings(workspace, {"command": "/usr/bin/node", "args": ["server/index.js"]})
    kernel = start_kernel(trusted=False)
    kernel.execute("%trust")
    kernel.execute("%python 1")
    assert _appears(workspace / "started")
    lib.write_text("require('fs').writeFileSync('changed-ran', '');\n")
    fresh = start_kernel(trusted=False).execute("%python 1", mode="headless")
    assert _changed_notice(fresh.text(), "server/lib.js"), fresh.text()
    assert not _appears(workspace / "changed-ran", timeout=3)


def test_a_server_loading_more_files_than_trust_can_vouch_for_does_not_start(
    start_kernel, workspace: Path, co_home: Path
):
    package = workspace / "big"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "server.py").write_text("open('started', 'w').close()\n")
    for i in range(2100):
        (package / f"m{i}.py").write_text(f"X = {i}\n")
    _settings(workspace, {"command": sys.executable, "args": ["-m", "big.server"]})
    kernel = start_kernel(trusted=False)
    kernel.execute("%trust")
    status = kernel.execute("%status", mode="headless")
    text = " ".join(status.text().split())
    assert "the MCP server 'tools' loads 2,102 files from this folder" in text, text
    assert "trust cannot vouch for them, so it does not start" in text
    assert "cwd" in text, "the message names the fix"
    assert not _appears(workspace / "started", timeout=3)
    assert kernel.execute("%python 1").status == "ok", "the kernel goes on"


@pytest.mark.docker
def test_a_sandbox_cell_changing_the_servers_package_makes_the_folder_ask_again(
    start_kernel,
    workspace: Path,
    co_home: Path,
    docker_client,  # noqa: F811 - fixture use
):
    package = workspace / "mcptools"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "server.py").write_text(SERVER.replace("import helper", "from . import helper"))
    (package / "helper.py").write_text(HELPER.format(marker="started"))
    if os.getuid() == 0:
        for path in [workspace, package, *package.iterdir()]:
            os.chown(path, SANDBOX_UID, SANDBOX_UID)
    _settings(workspace, {"command": sys.executable, "args": ["-m", "mcptools.server"]})
    kernel = start_kernel({"CO_SANDBOX": "docker", "CO_SANDBOX_IMAGE": TEST_IMAGE}, trusted=False)
    kernel.execute("%trust")
    kernel.execute("%python 1")
    assert _appears(workspace / "started")
    changed = "open('changed-ran', 'w').close()\\nWORD = 'v2'\\n"
    cell = kernel.execute(f'!printf "{changed}" > mcptools/helper.py', timeout=180)
    assert cell.status == "ok", cell.text()
    assert "changed-ran" in (package / "helper.py").read_text()
    after = kernel.execute("%python 1", mode="headless")
    assert _changed_notice(after.text(), "mcptools/helper.py"), after.text()
    assert not _appears(workspace / "changed-ran", timeout=3)


def test_a_change_to_a_module_a_shell_launched_server_imports_asks_again(
    start_kernel, workspace: Path, co_home: Path
):
    """A server started through a shell line (`sh -c 'export X=1 && exec python srv.py'`):
    the modules beside the script are its code as much as with `python srv.py`."""
    (workspace / "srv.py").write_text(SERVER)
    helper = workspace / "helper.py"
    helper.write_text(HELPER.format(marker="started"))
    line = "export MODE=prod && exec ${CO_PYTHON} srv.py"
    _settings(workspace, {"command": "sh", "args": ["-c", line]})
    kernel = start_kernel(trusted=False)
    kernel.execute("%trust")
    kernel.execute("%mcp", timeout=60)
    assert _appears(workspace / "started")

    helper.write_text(HELPER.format(marker="changed-ran"))
    after = kernel.execute("%python 1", mode="headless")
    assert _changed_notice(after.text(), "helper.py"), after.text()
    restart = kernel.execute("%mcp restart tools", mode="headless", timeout=60)
    assert restart.status == "error" and "There is no MCP server `tools`" in restart.text()
    assert not (workspace / "changed-ran").exists(), "the changed code ran before trust"
    kernel.execute("%trust")
    kernel.execute("%mcp", timeout=60)
    assert _appears(workspace / "changed-ran")
