"""The `%tools` report for real pydantic-ai toolsets (the kernel test covers the empty case)."""

from __future__ import annotations

from pydantic_ai import Tool
from pydantic_ai.toolsets import FunctionToolset

from co_kernel.config import Permissions
from co_kernel.magics.tools import format_tools
from co_kernel.tools import ToolsetBuild


def run_shell(command: str) -> str:
    """Run a command."""
    return command


def read_file(path: str) -> str:
    """Read a file."""
    return path


def _builds() -> list[ToolsetBuild]:
    shell = FunctionToolset([Tool(run_shell, requires_approval=True), read_file])
    return [
        ToolsetBuild("shell", shell),
        ToolsetBuild("slack", None, reason="set `slack_bot_token` to enable"),
    ]


def test_each_tool_says_whether_it_asks_first() -> None:
    report = format_tools(_builds(), auto_confirm=False)
    assert "**Tools Co may call** (2)" in report
    assert "| `read_file` | shell | runs without asking |" in report
    assert "| `run_shell` | shell | asks first |" in report
    assert "| slack | set `slack_bot_token` to enable |" in report


def test_yolo_is_reflected() -> None:
    report = format_tools(_builds(), auto_confirm=True)
    assert "| `run_shell` | shell | auto-approved (%yolo on) |" in report


def test_an_explicit_approval_map_wins() -> None:
    build = ToolsetBuild("custom", FunctionToolset([read_file]), approval={"read_file": True})
    assert "| `read_file` | custom | asks first |" in format_tools([build], auto_confirm=False)


def test_permission_rules_show_in_each_tools_approval() -> None:
    rules = Permissions(allow=["read_*"], ask=["run_shell(*)"], deny=["run_shell"]).rules(
        "user settings"
    )
    report = format_tools(_builds(), auto_confirm=False, rules=rules)
    assert "| `read_file` | shell | runs without asking (rule `allow read_*`) |" in report
    assert "| `run_shell` | shell | never runs (rule `deny run_shell`) |" in report
    only_some = Permissions(ask=["read_file(secret/*)"]).rules("session")
    report = format_tools(_builds(), auto_confirm=True, rules=only_some)
    assert "| `read_file` | shell | runs without asking; rules decide some calls |" in report


def test_tools_not_offered_now_are_named_apart() -> None:
    report = format_tools(_builds(), auto_confirm=False, offered={"run_shell"})
    assert "**Tools Co may call** (1)" in report and "| `read_file` |" not in report
    assert "Registered but not offered right now: `read_file`" in report


def test_a_kernel_lists_the_skill_tools_only_once_a_skill_exists(kernel, workspace) -> None:
    before = kernel.execute("%tools").markdown()
    assert "| `load_skill` |" not in before
    # No page shows the notebook here either: the cell-editing tools are held back too.
    held = "`run_cell`, `load_skill`, `read_skill_resource`, `delegate_task`"
    assert (
        f"not offered right now: `delete_cells`, `edit_cell`, `insert_cells`, `move_cell`, {held}"
        in before
    )
    skill = workspace / ".co" / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Say hello.\n---\nHello.\n")
    after = kernel.execute("%tools").markdown()
    assert "| `load_skill` | skills | runs without asking |" in after
    assert (
        "not offered right now: `delete_cells`, `edit_cell`, `insert_cells`, `move_cell`, `run_cell`, `delegate_task` ("
        in after
    )  # no subagent, no page yet


def web_fetch(url: str) -> str:
    """Fetch a page."""
    return url


def test_web_fetch_says_which_urls_run_without_asking() -> None:
    report = format_tools([ToolsetBuild("web", FunctionToolset([web_fetch]))], auto_confirm=False)
    assert (
        "| `web_fetch` | web | runs for a URL you gave or a link of this turn; asks for any other |"
        in report
    )
