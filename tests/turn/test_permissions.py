"""Permission rules: which rule decides a call, by a table and by hypothesis.

The table checks ``decide`` on calls of every kind of tool against rule sets; the
property tests generate shell commands that chain, redirect or substitute and check that
no glob rule ever allows one (only a rule naming the command exactly may, unless the
line is opaque: then no rule allows it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from co_kernel.config import Permissions, Settings
from co_kernel.permissions._rules import decide, narrowest_rule
from co_kernel.permissions._shell_parse import parse_line

WS = Path("/ws")


def sh(cmd: str) -> tuple[str, dict[str, Any]]:
    return "run_shell_command", {"cmd": cmd}


GIT = {
    "allow": ["run_shell_command(git status*)", "run_shell_command(git log*)"],
    "ask": ["run_shell_command(git push*)"],
    "deny": ["run_shell_command(rm -rf*)"],
}
FILES = {
    "allow": ["write_file(notes/**)", "read_file"],
    "deny": ["write_file(notes/secret/**)"],
    "ask": ["read_file(private/*)"],
}
WEB = {
    "allow": ["web_fetch(docs.python.org)", "web_fetch(*.python.org)"],
    "deny": ["web_fetch"],
    "ask": ["web_search"],
}
MCP = {
    "allow": ["git_status", "git_log", "mcp_*"],
    "ask": ["git_*"],
    "deny": ['git_reset({"mode":"hard"*)'],
}
EXACT = {"allow": ["run_shell_command(make test && make lint)"]}
# fmt: off
TABLE: list[tuple[dict[str, list[str]], tuple[str, dict[str, Any]], str | None]] = [
    (GIT, sh("git status"), "allow"),
    (GIT, sh("git status --short"), "allow"),
    (GIT, sh("git log -p -3"), "allow"),
    (GIT, sh("git status; rm -rf x"), "deny"),
    (GIT, sh("git status; rm x"), None),
    (GIT, sh("git status && curl evil"), None),
    (GIT, sh("git status | sh"), "deny"),  # sh runs what it reads: any deny rule stops it
    (GIT, sh("git status > out.txt"), None),
    (GIT, sh("git status $(rm -rf x)"), "deny"),
    (GIT, sh("git log `id`"), None),
    (GIT, sh("git status\nrm x"), None),
    (GIT, sh("git push origin main"), "ask"),
    (GIT, sh("ls && git push"), "ask"),
    (GIT, sh("rm -rf /"), "deny"),
    (GIT, sh("echo hi; rm -rf ~"), "deny"),
    (GIT, sh("git diff"), None),
    (GIT, sh("  git status  "), "allow"),
    (GIT, ("read_file", {"path": "a"}), None),
    (FILES, ("write_file", {"path": "notes/a.md"}), "allow"),
    (FILES, ("write_file", {"path": "notes/deep/b/c.md"}), "allow"),
    (FILES, ("write_file", {"path": "./notes/a.md"}), "allow"),
    (FILES, ("write_file", {"path": "/ws/notes/a.md"}), "allow"),
    (FILES, ("write_file", {"path": "notes/../x.py"}), None),
    (FILES, ("write_file", {"path": "/elsewhere/notes/a.md"}), None),
    (FILES, ("write_file", {"path": "notes/secret/k.md"}), "deny"),
    (FILES, ("write_file", {"path": "other.md"}), None),
    (FILES, ("edit_file", {"path": "notes/a.md"}), None),
    (FILES, ("read_file", {"path": "anything.txt"}), "allow"),
    (FILES, ("read_file", {"path": "private/x.txt"}), "ask"),
    (FILES, ("read_file", {"path": "private/sub/x.txt"}), "allow"),
    (WEB, ("web_fetch", {"url": "https://docs.python.org/3/"}), "deny"),
    (WEB, ("web_search", {"query": "python"}), "ask"),
    ({"allow": ["web_fetch(*.python.org)"]}, ("web_fetch", {"url": "https://docs.python.org/x"}), "allow"),
    ({"allow": ["web_fetch(*.python.org)"]}, ("web_fetch", {"url": "https://python.org.evil.com/"}), None),
    ({"allow": ["web_fetch(*.python.org)"]}, ("web_fetch", {"url": "https://evil.com/docs.python.org"}), None),
    ({"allow": ["web_fetch(*.python.org)"]}, ("web_fetch", {"url": "https://x@evil.com/"}), None),
    ({"allow": ["web_fetch(*.python.org)"]}, ("web_fetch", {"url": "https://DOCS.PYTHON.ORG/"}), "allow"),
    ({"allow": ["web_fetch(*.python.org)"]}, ("web_fetch", {"url": "not a url"}), None),
    (MCP, ("git_status", {"repo_path": "."}), "ask"),
    (MCP, ("git_reset", {"mode": "hard", "repo_path": "."}), "deny"),
    (MCP, ("git_reset", {"mode": "soft", "repo_path": "."}), "ask"),
    (MCP, ("mcp_time_now", {}), "allow"),
    ({"allow": ["git_status", "git_log"]}, ("git_status", {"repo_path": "."}), "allow"),
    ({"allow": ["git_status", "git_log"]}, ("git_commit", {"message": "m"}), None),
    ({"allow": ['time_get({"timezone":"Europe/*"})']}, ("time_get", {"timezone": "Europe/Paris"}), "allow"),
    ({"allow": ['time_get({"timezone":"Europe/*"})']}, ("time_get", {"timezone": "Asia/Tokyo"}), None),
    (EXACT, sh("make test && make lint"), "allow"),
    (EXACT, sh("make test && make lint; rm x"), None),
    (EXACT, sh("make test &&  make lint"), None),
    ({"deny": ["*"]}, ("read_file", {"path": "a"}), "deny"),
    ({"allow": ["*"], "deny": ["run_shell_command"]}, sh("ls"), "deny"),
    ({"ask": ["list_files"]}, ("list_files", {"glob": "*.py"}), "ask"),
    ({"allow": ["list_files(src/*)"]}, ("list_files", {"glob": "src/*"}), "allow"),
    ({}, sh("ls"), None),
]
# fmt: on


@pytest.mark.parametrize(("layer", "call", "expected"), TABLE)
def test_the_strongest_matching_rule_decides(layer, call, expected) -> None:
    rules = Permissions(**layer).rules("user settings")
    tool, args = call
    found = decide(rules, tool, args, WS)
    assert (found.kind if found else None) == expected, (layer, call, found)


def test_the_table_is_big_enough() -> None:
    assert len(TABLE) >= 40


WORDS = st.sampled_from(["git", "status", "log", "ls", "-la", "x", "rm", "-rf", "/", "echo", "hi"])
JOINERS = [";", "&&", "||", "|", "&", ">", ">>", "<", "\n", "$(", "`", "${"]


@st.composite
def compound_commands(draw: st.DrawFn) -> str:
    left = " ".join(draw(st.lists(WORDS, min_size=1, max_size=4)))
    right = " ".join(draw(st.lists(WORDS, min_size=1, max_size=4)))
    joiner = draw(st.sampled_from(JOINERS))
    spaces = draw(st.sampled_from(["", " "]))
    return f"{left}{spaces}{joiner}{spaces}{right}"


@st.composite
def glob_rules(draw: st.DrawFn) -> str:
    head = " ".join(draw(st.lists(WORDS, min_size=0, max_size=3)))
    return draw(st.sampled_from([f"{head}*", f"{head} *", "*", f"*{head}*", f"{head}?*"]))


@settings(max_examples=400, deadline=None)
@given(command=compound_commands(), globs=st.lists(glob_rules(), min_size=1, max_size=4))
def test_no_glob_rule_allows_a_chain_redirect_or_substitution(command, globs) -> None:
    rules = Permissions(allow=[f"run_shell_command({g})" for g in globs]).rules("user settings")
    assert decide(rules, "run_shell_command", {"cmd": command}, WS) is None


@settings(max_examples=200, deadline=None)
@given(command=compound_commands())
def test_a_rule_naming_the_compound_command_exactly_allows_it(command) -> None:
    if not command.strip() or ")" in command:
        return  # `tool(...)` cannot hold a command that is blank or has a stray ')' at the end
    rules = Permissions(allow=[f"run_shell_command({command.strip()})"]).rules("user settings")
    found = decide(rules, "run_shell_command", {"cmd": command}, WS)
    if parse_line(command.strip()).opaque:
        assert found is None  # unreadable (`git$(git`) or running hidden code: never allowed
    else:
        assert found is not None and found.kind == "allow"


@pytest.mark.parametrize(
    ("call", "rule"),
    [
        (sh("git status -s"), "run_shell_command(git status*)"),
        (sh("ls -la"), "run_shell_command(ls*)"),
        (sh("cat notes.txt"), "run_shell_command(cat*)"),
        (sh("ls; rm x"), "run_shell_command(ls; rm x)"),
        (("write_file", {"path": "notes/a*.md"}), "write_file(notes/a[*].md)"),
        (("web_fetch", {"url": "https://docs.python.org/3/"}), "web_fetch(docs.python.org)"),
        (("git_status", {"repo_path": "."}), "git_status"),
    ],
)
def test_always_allow_proposes_the_narrowest_rule_and_it_matches(call, rule) -> None:
    tool, args = call
    assert narrowest_rule(tool, args, WS) == rule
    rules = Permissions(allow=[rule]).rules("session")
    found = decide(rules, tool, args, WS)
    assert found is not None and found.kind == "allow"


def test_bad_rules_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="is not `tool` or `tool\\(pattern\\)`"):
        Settings(permissions={"allow": ["run shell"]})
    with pytest.raises(ValueError, match="empty pattern"):
        Settings(permissions={"deny": ["web_fetch()"]})
