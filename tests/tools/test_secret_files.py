"""Co's own secret files in the workspace: with the notebook in the home folder (CO_HOME
under the workspace), Co's settings, its Google token and client file, `.env*` files and
any path named in a secret setting are refused by every file tool, however they are
spelled or reached. list_files and grep leave them out; read_file says why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import ModelRetry, ToolFailed

from co_kernel.config import McpServerSpec
from co_kernel.session_state import CoDeps
from co_kernel.tools import files

from ..support.deps import deps_for
from .conftest import ctx, write_token

KEY = "BSAsecret0123456789abcdef"
TOKEN = "ya29.workspace-token-7c1d0e"


@pytest.fixture
def home(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The workspace is the home folder: Co's home lies inside it. Returns protected files
    (relative to the workspace) by what they are."""
    monkeypatch.setenv("CO_HOME", str(workspace / ".config" / "co"))
    config = workspace / ".config" / "co" / "config"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"brave_search_api_key": KEY}))
    write_token(config / "google_token.json", token=TOKEN)
    (config / "google_client_secrets.json").write_text(json.dumps({"client_secret": KEY}))
    (workspace / ".co").mkdir()
    (workspace / ".co" / "settings.json").write_text(json.dumps({"api_key": KEY}))
    (workspace / ".env").write_text(f"BRAVE_API_KEY={KEY}\n")
    (workspace / "app").mkdir()
    (workspace / "app" / ".ENV.production").write_text(f"KEY={KEY}\n")
    (workspace / "keys").mkdir()
    (workspace / "keys" / "service-account.json").write_text(json.dumps({"private_key": KEY}))
    (workspace / "readme.md").write_text("nothing secret here\n")
    return {
        "user settings": ".config/co/config/settings.json",
        "google token": ".config/co/config/google_token.json",
        "google client": ".config/co/config/google_client_secrets.json",
        "project settings": ".co/settings.json",
        "env": ".env",
        "env variant": "app/.ENV.production",
        "path in a secret setting": "keys/service-account.json",
    }


def _deps_naming_a_key_file(workspace: Path, **values: object) -> CoDeps:
    # The MCP server's env names a credentials file: a path in a secret setting.
    account = str(workspace / "keys" / "service-account.json")
    servers = {"gcp": McpServerSpec(command="x", env={"GOOGLE_APPLICATION_CREDENTIALS": account})}
    return deps_for(workspace, mcp_servers=servers, **values)


def _outcome(call) -> str:
    """What the model would see: the result's text or the refusal."""
    try:
        return json.dumps(call())
    except ToolFailed as exc:
        return f"refused: {exc.message}"
    except ModelRetry as exc:
        return f"retry: {exc.message}"


def test_every_protected_file_is_refused_and_hidden(home, workspace):
    deps = _deps_naming_a_key_file(workspace)
    for what, rel in home.items():
        seen = _outcome(lambda rel=rel: files.read_file(ctx(deps), rel))
        assert seen.startswith("refused:") and "may hold secrets" in seen, (what, seen)
        assert KEY not in seen and TOKEN not in seen
        written = _outcome(lambda rel=rel: files.write_file(ctx(deps, approved=True), rel, "{}"))
        assert written.startswith("refused:"), (what, written)
    listed = files.list_files(ctx(deps))["display"]
    assert listed.startswith("1 files match") and "readme.md" in listed
    hidden = files.list_files(ctx(deps), "*.json")
    assert hidden["count"] == 0, hidden["display"]
    for pattern in (KEY, TOKEN.replace(".", r"\.")):
        assert files.grep(ctx(deps), pattern)["count"] == 0
    assert (workspace / ".co" / "settings.json").read_text() == json.dumps({"api_key": KEY})


def test_links_to_protected_files_are_refused_even_with_hard_links_allowed(home, workspace):
    deps = _deps_naming_a_key_file(workspace, file_allow_hard_links=True)
    os.symlink(workspace / home["google token"], workspace / "token-link.json")
    os.link(workspace / home["user settings"], workspace / "settings-copy.json")
    for rel in ("token-link.json", "settings-copy.json"):
        seen = _outcome(lambda rel=rel: files.read_file(ctx(deps), rel))
        assert seen.startswith("refused:") and KEY not in seen and TOKEN not in seen, seen
    assert files.grep(ctx(deps), KEY)["count"] == 0


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_spelling_of_a_protected_file_reads_it(home, workspace, data):
    """Case changes, `./` prefixes, doubled slashes and absolute paths of every protected
    file: each is refused or missing, never read."""
    rel = data.draw(st.sampled_from(sorted(home.values())))
    flips = data.draw(st.lists(st.booleans(), min_size=len(rel), max_size=len(rel)))
    spelled = "".join(c.swapcase() if f else c for c, f in zip(rel, flips, strict=True))
    spelled = data.draw(
        st.sampled_from(
            [spelled, f"./{spelled}", spelled.replace("/", "//"), f"{workspace}/{spelled}"]
        )
    )
    seen = _outcome(lambda: files.read_file(ctx(_deps_naming_a_key_file(workspace)), spelled))
    assert KEY not in seen and TOKEN not in seen
