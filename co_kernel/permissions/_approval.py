"""Deciding side-effectful tool calls: run now, refuse, or defer to the person.

Permission rules (``_rules``) come first: a ``deny`` rule refuses, an ``ask`` rule
asks, an ``allow`` rule approves what the guards let through. Otherwise a call runs
without asking only under session yolo or, for the shell tool, when the command is one simple command (read by ``_shell_parse``)
that starts with a configured safe prefix, neither chains nor redirects, runs no hidden
code, uses only read-only options (``_shell_options``), names none of Co's protected files (nor, for a
recursive grep, a tree holding one) and, when commands run on the host, reads nothing
outside the workspace and is no git command in a repository that could make git run
another command (``_git_repo``).
Every decision has a label (``approved``, ``denied``, ``yolo``, ``allowed by rule …``,
...) that the turn keeps
in ``TurnResult.decisions`` and the frontends write into the call's persistent card.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from ._parts import partial_label, split_partial
from ._shell_options import COMMANDS, Parsed, parse_arguments, parse_find
from ._shell_parse import parse_line

if TYPE_CHECKING:
    from pydantic import JsonValue

    from ..session_state import CoDeps

__all__ = [
    "ALLOWED",
    "ALWAYS_ALLOWED",
    "APPROVED",
    "APPROVED_ALL",
    "DENIED",
    "INTERRUPTED",
    "OUTBOUND",
    "RECORDED",
    "SAFE_PREFIX",
    "SHELL_TOOL",
    "TIMED_OUT",
    "YOLO",
    "ApprovalDecision",
    "auto_decision",
    "decision_label",
    "denial_message",
    "is_refusal",
    "is_safe_command",
    "normalise_args",
    "outbound_floor",
    "record_decision",
    "replayed_decision",
]

ApprovalDecision = Literal["approve", "deny", "approve_all", "always_allow", "timed_out"]
"""A person's answer; ``timed_out`` when nobody answered within ``approval_timeout``;
``always_allow`` approves and adds the request's ``rule`` for the rest of the session."""

SHELL_TOOL = "run_shell_command"

# Decision labels, as written on the tool-call card and in TurnResult.decisions.
APPROVED = "approved"
APPROVED_ALL = "approved all"
DENIED = "denied"
TIMED_OUT = "timed out"
INTERRUPTED = "interrupted"
YOLO = "yolo"
SAFE_PREFIX = "safe-prefix"
ALLOWED = "allowed"
ALWAYS_ALLOWED = "always allowed"
"""The label of a call approved with "Always allow", which also added a session rule."""
"""Start of the label of a call an allow rule approved: ``allowed by rule `…` (source)``."""
RECORDED = " (recorded)"
"""Appended to a decision a replay took from its script (``approved (recorded)``)."""

_LABELS: dict[str, str] = {
    "approve": APPROVED,
    "approve_all": APPROVED_ALL,
    "always_allow": ALWAYS_ALLOWED,
    "deny": DENIED,
    "timed_out": TIMED_OUT,
}

PathCheck = Callable[[list[str], bool], bool]
"""Given a safe command's path arguments and whether it reads whole trees, whether they
may be read without asking."""


def _arguments(prefix: str, words: list[str]) -> Parsed | None:
    """The arguments after ``prefix``, parsed by its option table; None when one writes."""
    args = words[len(prefix.split()) :]
    if prefix == "find":
        return parse_find(args)
    spec = COMMANDS.get(prefix)
    if spec is None:
        # A configured prefix Co knows nothing about: its arguments, but no options.
        if any(w.startswith("-") for w in args):
            return None
        return Parsed(paths=list(args))
    return parse_arguments(spec, args)


def is_safe_command(
    command: str, safe_prefixes: list[str], paths_ok: PathCheck | None = None
) -> bool:
    """True when ``command`` is a safe prefix with only read-only options and arguments.

    ``paths_ok``, when given, also vets the files the command would read.
    """
    line = parse_line(command.strip())
    if not line.plain or line.opaque or line.writes or line.commands[0].assigns:
        return False  # it chains, redirects, substitutes, runs hidden code or writes
    words = list(line.commands[0].words)
    for prefix in safe_prefixes:
        prefix = " ".join(prefix.split())
        if prefix and words[: len(prefix.split())] == prefix.split():
            parsed = _arguments(prefix, words)
            if parsed is None:
                return False
            return paths_ok is None or paths_ok(parsed.paths, parsed.recursive)
    return False


_WALK_LIMIT = 20_000
"""Entries a recursive command's tree is searched for protected files before asking anyway."""


def _expansions(workspace: Path, word: str) -> list[Path]:
    """The paths the shell may make of ``word`` in the workspace: its glob matches, and
    the word itself (what the shell passes on when nothing matches)."""
    found = [workspace / word]
    if any(c in word for c in "*?["):
        found += [workspace / m for m in glob.glob(word, root_dir=workspace)]
    return found


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _holds_protected(folder: Path, is_secret: Callable[[Path], bool]) -> bool:
    """Whether a tree holds a protected file; True, to be safe, when it is too big to tell."""
    seen = 0
    for top, dirs, files in os.walk(folder):
        seen += len(dirs) + len(files)
        if seen > _WALK_LIMIT or any(is_secret(Path(top, f)) for f in files):
            return True
    return False


def _on_host(deps: CoDeps) -> bool:
    return deps.settings.sandbox.strip().lower() == "subprocess"


def _runs_repo_commands(command: str, deps: CoDeps) -> bool:
    """Whether ``command`` is git run on the host in a repository whose configuration,
    hooks or submodules could make it run other commands (``_git_repo``). In the Docker
    sandbox they would run in the container, which is where commands run anyway."""
    if not _on_host(deps) or all(c.argv[:1] != ("git",) for c in parse_line(command).commands):
        return False
    from ._git_repo import repo_may_run_commands

    return repo_may_run_commands(deps.workspace)


def _container_workspace() -> str:
    from ..sandbox import WORKSPACE_MOUNT

    return WORKSPACE_MOUNT


def _path_check(deps: CoDeps, *, confine: bool = True) -> PathCheck:
    """Which path arguments a command may read without asking, for this session; with
    ``confine`` (auto-approval), on the host only paths inside the workspace."""
    from ..config import is_protected

    settings, workspace = deps.settings, Path(os.path.realpath(deps.workspace))
    on_host = confine and _on_host(deps)
    # In the container, only the workspace is the host's: outside it, paths are the image's.
    mount = "" if on_host else _container_workspace()

    def is_secret(path: Path) -> bool:
        return is_protected(path, settings, workspace)

    def allowed(paths: list[str], recursive: bool) -> bool:
        for word in paths:
            if "$" in word or word.startswith("~"):
                return False  # the shell expands it to somewhere we cannot see from here
            if mount and (word == mount or word.startswith(mount + "/")):
                word = str(workspace) + word[len(mount) :]  # where the container sees it
            for path in _expansions(workspace, word):
                real = Path(os.path.realpath(path))
                if not _inside(real, workspace):
                    if on_host:
                        return False
                    continue  # the container's own files, not the host's
                if is_secret(path) or (
                    recursive and real.is_dir() and _holds_protected(real, is_secret)
                ):
                    return False
        return True

    return allowed


def normalise_args(args: dict[str, Any] | str | None) -> dict[str, Any]:
    """Tool-call args arrive as a JSON string, a dict or nothing; always return a dict."""
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    try:
        value: JsonValue = json.loads(args) if args.strip() else {}
    except json.JSONDecodeError:
        return {"_raw": args}
    return value if isinstance(value, dict) else {"_value": value}


def _shell_guards_allow(command: str, deps: CoDeps) -> bool:
    """Whether a command a rule allows passes the guards a rule cannot lift: it names none
    of Co's protected files (nor reads a tree holding one, to be safe whenever an option
    could mean recursion), and on the host it is no git command a repository could turn
    into another command."""
    try:
        words = shlex.split(command)[1:]
    except ValueError:
        return False
    recursive = any(w.startswith("-") and "r" in w.lower() for w in words)
    paths = [w.partition("=")[2] if w.startswith("-") else w for w in words]
    return _path_check(deps, confine=False)([p for p in paths if p], recursive) and (
        not _runs_repo_commands(command, deps)
    )


def auto_decision(
    tool_name: str, args: dict[str, Any], deps: CoDeps, *, outbound: bool | None = None
) -> str | None:
    """How a call is decided without asking, as its card label, or None to ask.

    A ``deny`` rule refuses (``denied by rule …``) even under yolo, and an ``ask`` rule
    of the managed settings asks even under yolo (a deployer's floor); then yolo approves
    everything (unless ``allow_yolo`` is off); an ``ask`` rule asks; an ``allow`` rule
    approves (``allowed by rule …``) what the guards let through; else a safe shell
    command runs (``safe-prefix``).

    ``outbound`` is set for a request the outbound gate sent here (``_outbound``): True
    when it is a floor (it repeats private text, or ``outbound_always_ask``), which only a
    deny rule decides without asking; False when yolo may approve it but no project
    file's allow rule may.
    """
    from ..config import MANAGED, PROJECT
    from ._rules import rule_for

    rule = rule_for(tool_name, args, deps)
    if rule is not None and rule.kind == "deny":
        return f"{DENIED} by rule `{rule.rule}` ({rule.source})"
    if outbound:
        return None
    if outbound is not None and rule is not None and rule.source == PROJECT:
        rule = None  # a cloned folder does not choose where the person's data goes
    if rule is not None and rule.kind == "ask" and rule.source == MANAGED:
        return None
    if deps.auto_confirm and deps.settings.allow_yolo:
        return YOLO
    if rule is not None and rule.kind == "ask":
        return None
    command = args.get("cmd", args.get("command")) if tool_name == SHELL_TOOL else None
    if rule is not None and (command is None or _shell_guards_allow(str(command), deps)):
        return f"{ALLOWED} by rule `{rule.rule}` ({rule.source})"
    if (
        isinstance(command, str)
        and is_safe_command(command, deps.settings.shell_safe_commands, _path_check(deps))
        and not _runs_repo_commands(command, deps)
    ):
        return SAFE_PREFIX
    return None


def decision_label(choice: ApprovalDecision) -> str:
    """The card label of a person's answer."""
    return _LABELS.get(choice, DENIED)


def is_refusal(label: str | None) -> bool:
    """Whether a decision label means the call did not run."""
    return label in (DENIED, TIMED_OUT, INTERRUPTED, DENIED + RECORDED) or (
        label is not None and label.startswith(f"{DENIED} by rule ")
    )


def replayed_decision(call_id: str, tool_name: str, args: Any, deps: CoDeps) -> str | None:
    """The decision recorded with this very call in the script a replay serves, or None.

    Recorded approvals bind a replay: Run All of a recorded notebook does what the person
    approved while recording, nothing more. ``approved all`` turns session yolo on again.
    """
    recorder = deps.recorder
    found = recorder.replayed_decision(call_id, tool_name, args) if recorder else None
    if recorder is None or found is None:
        return None
    if found == APPROVED_ALL and deps.settings.allow_yolo:
        deps.auto_confirm = True
    cells = recorder.replayed_cells(call_id)
    if cells is not None:
        found = partial_label(found, [i for i, ok in enumerate(cells) if ok], len(cells))
    return found + RECORDED


def record_decision(call_id: str, label: str, deps: CoDeps, *, by_policy: bool = False) -> None:
    """Keep the decision with the recorded call, when the session records.

    A denial by a headless run's ``approval_mode`` is not kept: a replay asks the policy
    again, and the model reads the policy's message, as it did when recorded.
    """
    if deps.recorder is not None and not (by_policy and is_refusal(label)):
        deps.recorder.record_decision(call_id, *split_partial(label))


def denial_message(label: str, timeout: float | None = None, *, policy: str | None = None) -> str:
    """What the model reads when a call was refused, so it can propose something else.

    ``policy`` is the ``approval_mode`` that answered in a headless run, where nobody
    was asked: the model must not tell the user they refused.
    """
    if label == TIMED_OUT:
        waited = f" within {timeout:g} s" if timeout else ""
        return (
            f"Nobody answered the approval request{waited}, so this action did not run. "
            "Do not retry it as is; say what you wanted to do so the user can decide."
        )
    if label.startswith(f"{DENIED} by rule "):
        return (
            f"This call was {label}, so it did not run. Do not retry it as is; say what you "
            "wanted to do, or do it another way the rules allow."
        )
    if policy is not None and label == DENIED:
        return (
            f"This action was denied by approval_mode={policy} (no one was asked): this run "
            "cannot ask for approval. Do not retry it as is; say what you wanted to do and "
            "what it needs."
        )
    return (
        "The user denied this action. Do not retry it as is; explain what you wanted to do "
        "and suggest an alternative."
    )


OUTBOUND = "outbound"
"""Key of a deferred call's metadata that says the outbound gate sent it to the card:
``{"floor": bool}`` (whether yolo and allow rules may still approve it)."""


def outbound_floor(metadata: object) -> bool | None:
    """Whether a deferred call's metadata makes it a floor (None: the gate did not ask)."""
    found = cast(dict[str, Any], metadata).get(OUTBOUND) if isinstance(metadata, dict) else None
    if not isinstance(found, dict):
        return None
    return bool(cast(dict[str, Any], found).get("floor"))
