"""The ``permissions`` setting: allow / ask / deny rules per tool and per argument.

A settings layer holds ``{"allow": [RULE, ...], "ask": [...], "deny": [...]}``. A RULE is
a tool name (globs allowed: ``mcp_*``) or ``tool(pattern)``: for ``run_shell_command`` a
glob over the whole command, for the file tools a glob over the workspace-relative path,
for ``web_fetch`` a glob over the host, for any other tool a glob over the JSON of its
arguments. Layers (managed settings, user settings, project settings, ``CO_PERMISSIONS``,
the session) add up; each rule remembers its layer, so ``%permissions`` can say where it comes from
and a project file's ``allow`` rules can wait for the person's consent. How a rule
matches a call is the business of ``permissions/_rules.py``; here rules are only
read and checked for syntax.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from ._managed import MANAGED, managed_settings_file
from ._private import private_folder

__all__ = [
    "KINDS",
    "PROJECT",
    "PermissionRule",
    "PermissionRules",
    "Permissions",
    "RuleKind",
    "as_rules",
    "merge_permission_layers",
    "parse_rule",
    "save_user_rule",
    "save_user_settings",
]

RuleKind = Literal["allow", "ask", "deny"]
KINDS: tuple[RuleKind, ...] = ("deny", "ask", "allow")
"""Strongest first: deny wins over ask, ask over allow."""
PROJECT = "project settings"
"""The layer whose allow rules wait for the person's consent."""

_RULE = re.compile(r"(?P<tool>[A-Za-z0-9_*?\[\]-]+)(?:\((?P<pattern>.*)\))?", re.DOTALL)


def parse_rule(text: str) -> tuple[str, str | None]:
    """(tool glob, argument pattern or None) of a rule; ValueError saying what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"a rule must be text, not {type(text).__name__}")
    match = _RULE.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"rule {text!r} is not `tool` or `tool(pattern)` (for example "
            "`web_search`, `mcp_*` or `run_shell_command(git status*)`)"
        )
    pattern = match.group("pattern")
    if pattern is not None and not pattern.strip():
        raise ValueError(f"rule {text!r} has an empty pattern; write `{match.group('tool')}`")
    return match.group("tool"), pattern


class PermissionRule(BaseModel):
    """One rule and where it comes from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: RuleKind
    """allow, ask or deny."""
    rule: str
    """As written: ``tool`` or ``tool(pattern)``."""
    source: str = "settings"
    """Its layer: user settings, project settings, CO_PERMISSIONS, session."""

    @field_validator("rule")
    @classmethod
    def _syntax(cls, value: str) -> str:
        parse_rule(value)
        return value.strip()

    @property
    def tool(self) -> str:
        """The tool-name glob."""
        return parse_rule(self.rule)[0]

    @property
    def pattern(self) -> str | None:
        """The argument glob, or None for every call of the tool."""
        return parse_rule(self.rule)[1]

    def __str__(self) -> str:
        return f"{self.kind} {self.rule}"


class Permissions(BaseModel):
    """One layer's ``permissions`` object."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)

    @field_validator("allow", "ask", "deny")
    @classmethod
    def _rules(cls, values: list[str]) -> list[str]:
        for value in values:
            parse_rule(value)
        return [v.strip() for v in values]

    def rules(self, source: str) -> list[PermissionRule]:
        """The layer's rules, strongest kind first."""
        return [
            PermissionRule(kind=kind, rule=text, source=source)
            for kind in KINDS
            for text in getattr(self, kind)
        ]


def as_rules(value: Any, source: str = "settings") -> list[PermissionRule]:
    """The rules a ``permissions`` value holds: a layer object, or rules already merged."""
    if isinstance(value, dict):
        return Permissions.model_validate(value).rules(source)
    if isinstance(value, Permissions):
        return value.rules(source)
    return [r if isinstance(r, PermissionRule) else PermissionRule.model_validate(r) for r in value]


PermissionRules = Annotated[list[PermissionRule], BeforeValidator(as_rules)]
"""The ``permissions`` setting: merged rules, or one layer's object (``Settings(...)``)."""


def merge_permission_layers(
    layers: list[tuple[str, dict[str, Any]]],
    merged: dict[str, Any],
    project_dir: Path | None,
    problems: list[str],
) -> None:
    """Set ``merged["permissions"]`` to the rules of every settings layer that has some
    (``load_settings``'s layers: a file's path or "environment"), in layer order, each
    labelled with its layer. A layer whose ``permissions`` is invalid is reported and
    left out; the others apply. (A project file never sets ``permissions_accept_project``:
    ``_project.py``'s table drops it before the layers merge.)"""
    from . import paths

    names = {
        str(managed_settings_file()): MANAGED,
        str(paths().settings_file): "user settings",
        "environment": "CO_PERMISSIONS",
    }
    if project_dir is not None:
        names[str(project_dir / ".co" / "settings.json")] = PROJECT
    if not any("permissions" in layer for _, layer in layers):
        return
    rules: list[PermissionRule] = []
    for label, layer in layers:
        if "permissions" not in layer:
            continue
        source = names.get(label, label)
        try:
            rules += as_rules(layer["permissions"], source)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(part) for part in err["loc"])
            detail = f"{where}: {err['msg'].removeprefix('Value error, ')}".lstrip(": ")
            problems.append(f"{label}: permissions: {detail}; this layer's rules are ignored")
        except (ValueError, TypeError) as exc:
            detail = str(exc)
            problems.append(f"{label}: permissions: {detail}; this layer's rules are ignored")
    merged["permissions"] = rules


def save_user_rule(rule: PermissionRule) -> Path:
    """Add ``rule`` to the user settings file's ``permissions`` (``%allow --save``),
    keeping everything else in the file."""

    def add(data: dict[str, Any], target: Path) -> None:
        layer = data.setdefault("permissions", {})
        if not isinstance(layer, dict):
            raise ValueError(f"{target}: `permissions` is not an object; fix it first")
        listed = cast(dict[str, list[str]], layer).setdefault(rule.kind, [])
        if rule.rule not in listed:
            listed.append(rule.rule)

    return _update_user_settings(add)


def save_user_settings(values: dict[str, Any]) -> Path:
    """Set settings in the user settings file (``%budget``); a value of None removes the
    key, so the setting falls back to its default. Everything else in the file is kept."""

    def put(data: dict[str, Any], _target: Path) -> None:
        for name, value in values.items():
            if value is None:
                data.pop(name, None)
            else:
                data[name] = value

    return _update_user_settings(put)


def _update_user_settings(change: Callable[[dict[str, Any], Path], None]) -> Path:
    """Read the user settings file, ``change`` its object, and write it back through a
    temporary file, then renamed."""
    import json
    import os

    from . import paths

    target = paths().settings_file
    try:
        data = json.loads(target.read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"{target} cannot be read as JSON ({exc}); fix it, then save again"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{target} does not hold a JSON object of settings; fix it first")
    change(cast(dict[str, Any], data), target)
    private_folder(target.parent)
    temporary = target.with_name(f".{target.name}.tmp")
    # The file may hold API keys: only its owner reads it, as a new settings file.
    mode = target.stat().st_mode & 0o700 if target.exists() else 0o600
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2)
        out.write("\n")
    os.chmod(temporary, mode)
    temporary.replace(target)
    return target
