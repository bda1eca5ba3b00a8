"""Permission rules: which rule, if any, decides a tool call.

``decide`` is pure: given the rules in force and one call (tool name, arguments, the
workspace), it returns the strongest matching rule (deny over ask over allow), or None
when no rule speaks and the built-in defaults apply (read-only tools run, side effects
ask, safe shell commands run). How a pattern matches depends on the tool:

- ``run_shell_command``: a glob over the command, read by a shell parser
  (``_shell_parse``). ``ask`` and ``deny`` rules match the whole line or any one simple
  command in it (through pipes, lists, subshells, substitutions, here-documents), as
  written or as run (``/bin/rm``, ``\\rm``, ``'rm'``, ``env rm``, ``FOO=1 rm`` are ``rm``):
  ``deny run_shell_command(rm*)`` catches ``ls && command rm x``, and a program that
  stands in for another (``_shell_programs.SYNONYMS``) meets the rules on that one too:
  ``unlink x`` is also read as ``rm x``. A line with an opaque
  command (``sh -c``, ``eval``, ``xargs``, ``find -exec``, ``python -c``, ``$CMD``, or
  one the parser cannot read: ``_shell_programs``) is matched by every ``ask`` and
  ``deny`` rule of the tool and allowed by none. An allow glob covers only a line of one
  simple command with no writing option (``git log --output``); a line that chains,
  redirects or substitutes, or has a writing option, is allowed only by a rule that names
  it exactly (no glob): ``git status*`` never allows ``git status; rm -rf x``.
- the file tools: a glob over the workspace-relative path (``*`` stays within a folder,
  ``**`` crosses folders); a path that climbs out (``..``) is never allowed by a rule.
- ``web_fetch``: a glob over the URL's host (``*.python.org``).
- any other tool (MCP tools included): a glob over the JSON of its arguments (keys
  sorted, no spaces: ``{"path":"a.txt"}``).

Rules never widen what the guards allow: an allowed call still meets the scope guard,
the SSRF guard, the sandbox and the protected files; a shell command allowed by a rule
must still name no protected file.

``active_rules`` is what a session applies: every settings layer's rules and the
session's own (``%allow``), except a project file's ``allow`` rules until the person
accepts them (``%permissions accept``: remembered per project by their hash) or the
setting ``permissions_accept_project`` says so (never taken from the project file).
``PermissionGate`` makes ``ask`` and ``deny`` rules reach tools that never ask: such a
call is deferred to the approval path, where ``_approval.auto_decision`` settles it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired

from ..config import KINDS, PROJECT, PermissionRule, paths, private_folder
from ..inert import inert_code
from ..session_state import ExtrasKey
from ._shell_parse import parse_line
from ._shell_programs import SYNONYMS

if TYPE_CHECKING:
    from pydantic import JsonValue
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import ValidatedToolArgs
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import ToolDefinition

    from ..session_state import CoDeps

__all__ = [
    "FILE_TOOLS",
    "SHELL_TOOL",
    "PermissionGate",
    "accept_project_rules",
    "active_rules",
    "decide",
    "narrowest_rule",
    "pending_project_rules",
    "project_rules_notice",
    "rule_for",
]

SHELL_TOOL = "run_shell_command"
FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_files", "grep"})
"""Tools whose rule pattern is a workspace-relative path glob (``path``, else ``glob``)."""
WEB_FETCH = "web_fetch"
_SUBCOMMANDS = frozenset(
    [
        "git",
        "pip",
        "pip3",
        "uv",
        "npm",
        "pnpm",
        "yarn",
        "cargo",
        "go",
        "docker",
        "podman",
        "kubectl",
        "conda",
        "mamba",
        "poetry",
        "gh",
        "apt",
        "apt-get",
        "brew",
        "systemctl",
        "jupyter",
        "make",
    ]
)
"""Commands whose second word is a subcommand: "Always allow" proposes both words."""
_ASKS_ITSELF = frozenset({SHELL_TOOL, "run_python"})
"""Tools that ask unless approved: an ask rule leaves the asking to them (and to
``auto_decision``, which never approves a safe command an ask rule names)."""

_ACCEPTED_FILE = "accepted-project-permissions.json"
_NOTICED = ExtrasKey[str]("permissions.noticed")
"""``deps.extras`` key: the hash of the pending project rules the session was told about."""


# -- matching (pure) ---------------------------------------------------------------------


def _path_regex(pattern: str) -> re.Pattern[str]:
    """A path glob: ``**`` any folders, ``*`` and ``?`` within one name, ``[...]`` a set."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        end = pattern.find("]", i + 2) if c == "[" else -1
        if end > 0:
            chars = pattern[i + 1 : end]
            negate = chars.startswith("!")
            body = re.escape(chars[1:] if negate else chars).replace("\\-", "-")
            out.append(f"[^/{body}]" if negate else f"[{body}]")
            i = end + 1
            continue
        out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _relative(raw: object, workspace: Path | None) -> str | None:
    """A file tool's path as a clean workspace-relative path, or None when it cannot be one."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    path = PurePosixPath(raw.strip())
    if path.is_absolute():
        if workspace is None:
            return None
        try:
            path = path.relative_to(os.path.realpath(workspace))
        except ValueError:
            return None
    if ".." in path.parts:
        return None
    text = path.as_posix()
    return "" if text == "." else text


def _arguments_json(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _shell_matches(pattern: str, command: str, kind: str) -> bool:
    command = command.strip()
    line = parse_line(command)
    if kind == "allow":
        if line.opaque:
            return False  # what it runs cannot be known
        if pattern.strip() == command:
            return True  # named exactly: the person saw what it does
        return line.plain and not line.writes and fnmatch.fnmatchcase(command, pattern)
    if line.opaque:
        return True  # it may run anything: every ask or deny rule of the tool stops it
    texts = [command]
    for part in line.commands:
        texts += [part.text, " ".join(part.words), " ".join(part.argv)]
        if part.argv and part.argv[0] in SYNONYMS:  # `unlink x` meets the rules on `rm`
            texts.append(" ".join((SYNONYMS[part.argv[0]], *part.argv[1:])))
    return any(fnmatch.fnmatchcase(t, pattern) for t in texts if t)


def matches(rule: PermissionRule, tool: str, args: dict[str, Any], workspace: Path | None) -> bool:
    """Whether ``rule`` speaks for a call of ``tool`` with ``args``."""
    if not fnmatch.fnmatchcase(tool, rule.tool):
        return False
    pattern = rule.pattern
    if pattern is None:
        return True
    if tool == SHELL_TOOL:
        command = args.get("cmd", args.get("command"))
        return isinstance(command, str) and _shell_matches(pattern, command, rule.kind)
    if tool in FILE_TOOLS:
        rel = _relative(args.get("path", args.get("glob")), workspace)
        return rel is not None and _path_regex(pattern).fullmatch(rel) is not None
    if tool == WEB_FETCH:
        url = args.get("url")
        try:
            host = urlsplit(url).hostname if isinstance(url, str) else None
        except ValueError:
            host = None
        return bool(host) and fnmatch.fnmatchcase(host or "", pattern.lower())
    return fnmatch.fnmatchcase(_arguments_json(args), pattern)


def decide(
    rules: Sequence[PermissionRule], tool: str, args: dict[str, Any], workspace: Path | None
) -> PermissionRule | None:
    """The rule that decides the call (deny over ask over allow), or None: the defaults."""
    found = [r for r in rules if matches(r, tool, args, workspace)]
    for kind in KINDS:
        for rule in found:
            if rule.kind == kind:
                return rule
    return None


def _escape(text: str) -> str:
    """``text`` as a glob that matches only itself."""
    return re.sub(r"([*?\[\]])", r"[\1]", text)


def narrowest_rule(tool: str, args: dict[str, Any], workspace: Path | None) -> str:
    """The rule "Always allow" proposes for this call: the command's first word (and the
    subcommand of git, pip, ...), the path, the host, or the tool: ``git status -s`` gives
    ``run_shell_command(git status*)``; a compound command only itself, exactly."""
    if tool == SHELL_TOOL:
        command = args.get("cmd", args.get("command"))
        if not isinstance(command, str) or not command.strip():
            return tool
        line = parse_line(command.strip())
        if not line.plain or line.opaque:
            return f"{tool}({command.strip()})"
        try:
            words = shlex.split(command)
        except ValueError:
            return f"{tool}({command.strip()})"
        head = words[:1]
        if len(words) > 1 and words[0] in _SUBCOMMANDS and re.fullmatch(r"[a-z][\w-]*", words[1]):
            head.append(words[1])  # git status, pip list: the subcommand says what it does
        return f"{tool}({' '.join(_escape(w) for w in head)}*)" if head else tool
    if tool in FILE_TOOLS:
        rel = _relative(args.get("path"), workspace)
        if rel:
            return f"{tool}({_escape(rel)})"
    if tool == WEB_FETCH and isinstance(url := args.get("url"), str):
        try:
            host = urlsplit(url).hostname
        except ValueError:
            host = None
        if host:
            return f"{tool}({host})"
    return tool


# -- what a session applies ---------------------------------------------------------------


def _accepted_file() -> Path:
    return paths().data_dir / _ACCEPTED_FILE


def _digest(rules: Sequence[PermissionRule]) -> str:
    return hashlib.sha256("\n".join(r.rule for r in rules).encode()).hexdigest()


def _project_key(deps: CoDeps) -> str:
    return os.path.realpath(deps.workspace)


def _accepted(deps: CoDeps) -> dict[str, JsonValue]:
    try:
        data: JsonValue = json.loads(_accepted_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def pending_project_rules(deps: CoDeps) -> list[PermissionRule]:
    """The project file's allow rules that wait for the person's consent (none once
    accepted for this content, or with ``permissions_accept_project``)."""
    rules = [r for r in deps.settings.permissions if r.source == PROJECT and r.kind == "allow"]
    if not rules or deps.settings.permissions_accept_project:
        return []
    return [] if _accepted(deps).get(_project_key(deps)) == _digest(rules) else rules


def accept_project_rules(deps: CoDeps) -> list[PermissionRule]:
    """Remember (in Co's data folder) that the person accepts this project's allow rules,
    as they are now; an edit of them asks again. Returns the rules accepted."""
    rules = pending_project_rules(deps)
    if rules:
        accepted = _accepted(deps)
        accepted[_project_key(deps)] = _digest(rules)
        target = _accepted_file()
        private_folder(target.parent)
        temporary = target.with_name(f".{target.name}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(accepted, indent=1))
        temporary.replace(target)
    return rules


def project_rules_notice(deps: CoDeps, *, headless: bool) -> str | None:
    """Once per session (and again when they change): the project file's allow rules
    that wait for consent, listed, with how to give it."""
    pending = pending_project_rules(deps)
    if not pending or deps.extras.get(_NOTICED) == _digest(pending):
        return None
    deps.extras[_NOTICED] = _digest(pending)
    listed = "\n".join(f"- {inert_code(f'allow {r.rule}')}" for r in pending)
    how = (
        "a headless run applies them only with the setting `permissions_accept_project` "
        "(user settings or `CO_PERMISSIONS_ACCEPT_PROJECT`)"
        if headless
        else "run `%permissions accept` to apply them (remembered for this project until "
        "they change)"
    )
    return (
        f"This project's `.co/settings.json` has allow rules that are not applied yet:\n"
        f"{listed}\n\nA cloned repository must not approve commands for you: {how}. "
        "Its `ask` and `deny` rules apply already."
    )


def active_rules(deps: CoDeps) -> list[PermissionRule]:
    """The rules in force for the session: settings layers and the session's own, without
    a project file's allow rules not yet accepted."""
    pending = set(pending_project_rules(deps))
    return [r for r in deps.settings.permissions if r not in pending] + list(deps.session_rules)


def rule_for(tool: str, args: dict[str, Any], deps: CoDeps) -> PermissionRule | None:
    """The rule in force that decides this call, or None."""
    return decide(active_rules(deps), tool, args, deps.workspace)


@dataclass
class PermissionGate(AbstractCapability[Any]):
    """Sends calls an ``ask`` or ``deny`` rule speaks for to the approval path, even of
    tools that never ask: nothing runs before ``auto_decision`` or the person decides."""

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    async def before_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
    ) -> ValidatedToolArgs:
        if ctx.tool_call_approved:
            return args
        rule = rule_for(tool_def.name, dict(args), ctx.deps)
        if rule is None or rule.kind == "allow":
            return args
        if rule.kind == "ask" and tool_def.name in _ASKS_ITSELF:
            return args  # it asks with its own detail (the code, the host warning)
        raise ApprovalRequired(
            metadata={"detail": f"The permission rule `{rule}` ({rule.source}) decides this call."}
        )
