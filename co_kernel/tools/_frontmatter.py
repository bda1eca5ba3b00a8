"""Markdown files with YAML front-matter: skills (``SKILL.md``) and subagents (``agents/*.md``).

Every problem is a ``DefinitionError`` naming the file and the line, so a person can
open the file at the spot; one broken file never stops the others from loading.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..exceptions import DefinitionError, TextFileError
from ._json import is_list
from ._scope import Protection, Root, Scope, read_text

__all__ = ["MarkdownDefinition", "parse_definition", "read_definition"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_KEY_LINE = re.compile(r"^([A-Za-z_][\w-]*)\s*:")
MAX_BYTES = 256_000
"""Larger definition files are refused: instructions, not data."""


@dataclass(frozen=True)
class MarkdownDefinition:
    """A parsed definition file: front-matter fields and the Markdown body."""

    path: Path
    """The file."""
    meta: dict[str, Any]
    """The front-matter mapping."""
    body: str
    """Everything after the closing ``---``, stripped."""
    lines: dict[str, int] = field(default_factory=dict[str, int])
    """Front-matter key -> the file line it is on, for error messages."""

    def error(self, key: str | None, message: str) -> DefinitionError:
        """An error pointing at ``key``'s line (or the opening ``---``)."""
        return DefinitionError(self.path, self.lines.get(key or "", 1), message)

    def text(self, key: str, *, required: bool) -> str | None:
        """A one-line text field; raises DefinitionError when missing or not text."""
        value = self.meta.get(key)
        if value is None:
            if required:
                raise self.error(None, f"the front-matter has no `{key}:`")
            return None
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise self.error(key, f"`{key}` must be text")
        text = " ".join(str(value).split())
        if required and not text:
            raise self.error(key, f"`{key}` is empty")
        return text

    def name(self) -> str:
        """The ``name`` field, checked to be usable as an identifier the model types."""
        name = self.text("name", required=True) or ""
        if not _NAME.match(name):
            raise self.error(
                "name",
                f"`name` {name!r} must be letters, digits, '-' or '_' (at most 64 characters)",
            )
        return name

    def names(self, key: str) -> tuple[str, ...] | None:
        """A list of names (``[a, b]`` or ``- a`` lines); None when the key is absent."""
        value = self.meta.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [v for v in re.split(r"[,\s]+", value) if v]
        if not is_list(value) or not all(isinstance(v, str) for v in value):
            raise self.error(key, f"`{key}` must be a list of names")
        return tuple(cast(list[str], value))


def parse_definition(path: Path, text: str) -> MarkdownDefinition:
    """Split ``text`` into front-matter and body; DefinitionError with the line when it is bad."""
    import yaml

    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise DefinitionError(
            path,
            1,
            "no front-matter: the file must start with a `---` line, then `name:` and "
            "`description:`, then `---`",
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise DefinitionError(path, 1, "the front-matter opened here is never closed with `---`")
    block = "\n".join(lines[1:end])
    try:
        meta: object = yaml.safe_load(block) if block.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 2 if mark is not None else 2  # +1: 0-based, +1: the opening ---
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DefinitionError(path, line, f"invalid YAML front-matter: {problem}") from None
    if not isinstance(meta, dict):
        raise DefinitionError(path, 2, "the front-matter must be `key: value` lines")
    key_lines: dict[str, int] = {}
    for number, line in enumerate(lines[1:end], start=2):
        match = _KEY_LINE.match(line)
        if match:
            key_lines.setdefault(match.group(1), number)
    body = "\n".join(lines[end + 1 :]).strip()
    pairs = cast(dict[object, Any], meta).items()  # YAML keys may be numbers, dates, ...
    return MarkdownDefinition(path, {str(k): v for k, v in pairs}, body, key_lines)


def read_definition(
    path: Path, anchor: Path, protection: Protection | None = None
) -> MarkdownDefinition:
    """Read and parse one definition file under ``anchor`` (the config dir or the notebook's
    folder), which alone is resolved: the folders below it and the file are opened by
    descriptor without following links, so a file or folder swapped for a link to elsewhere
    meanwhile is refused, never read. Files with several hard links are refused too."""
    root = Root(Path(os.path.realpath(anchor)), "definitions", frozenset({"read"}))
    scope = Scope((root,), protection=protection or Protection())
    rel = path.relative_to(anchor).as_posix()
    try:
        text = read_text(
            scope,
            root,
            rel,
            MAX_BYTES,
            shown=path.name,
            limit="a definition file is instructions, not data",
        )
    except TextFileError as exc:
        raise DefinitionError(path, 1, str(exc)) from None
    except (FileNotFoundError, IsADirectoryError):
        raise DefinitionError(path, 1, "the file is gone or not a file") from None
    except OSError as exc:
        raise DefinitionError(path, 1, f"cannot read the file ({exc.strerror or exc})") from None
    return parse_definition(path, text)
