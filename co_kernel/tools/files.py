"""Workspace files: list, read, write and edit, behind the scope guard (``_scope``).

The workspace is the notebook's folder; ``read_roots`` add read-only folders. Every path
goes through ``_scope.guarded`` before any access, and every decision is audited. Writes
and edits need approval; the approval card shows the unified diff of the change, which
the argument validator computes and attaches as the deferred call's metadata.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai import ApprovalRequired, ModelRetry, RunContext, Tool, ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from ..exceptions import TextFileError
from ..session_state import CoDeps  # at run time: pydantic-ai reads the tools' annotations
from . import ToolsetBuild
from ._audit import record_access
from ._paging import paginate, result
from ._scope import Protection, Resolved, Root, Scope, guarded, read_bytes, read_text, walk
from ._textfile import replace_below

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["build", "edit_file", "files_scope", "grep", "list_files", "read_file", "write_file"]

READ_PAGE_LINES = 500
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
"""Files read_file reads as images."""
IMAGE_FILE_MAX_BYTES = 50_000_000
"""The largest image file read (then downscaled): a photo's size, well past `file_max_bytes`."""
_T = TypeVar("_T")
LIST_PAGE = 100
GREP_PAGE = 50
_DIFF_CHARS = 20_000
_LINE_CHARS = 300


def files_scope(deps: CoDeps) -> Scope:
    """The workspace (per the scope settings) plus the read-only read roots, without Co's
    own secret files (`config.protected_paths`)."""
    s = deps.settings
    ops = frozenset(s.scope_operations)
    workspace = Path(os.path.realpath(deps.workspace))
    roots = [Root(workspace, "workspace", ops, tuple(s.scope_folders) or ("*",))]
    for raw in s.read_roots:
        path = Path(raw).expanduser()
        real = Path(os.path.realpath(path if path.is_absolute() else workspace / path))
        roots.append(Root(real, "read root", ops & {"read"}))
    return Scope(
        tuple(roots),
        file_types=tuple(s.scope_file_types) or ("*",),
        protection=Protection.of(s, workspace),
    )


def _shown(found: Resolved) -> str:
    """How results name a file: relative in the workspace, absolute in a read root."""
    return found.rel if found.root.label == "workspace" else str(found.path)


def _current(deps: CoDeps, scope: Scope, found: Resolved) -> str | None:
    """The file's text, None when there is no such file."""
    max_bytes = deps.settings.file_max_bytes
    return _opened(
        found, lambda: read_text(scope, found.root, found.rel, max_bytes, shown=_shown(found))
    )


def _opened(found: Resolved, read: Callable[[], _T]) -> _T | None:
    """What ``read`` read; None when there is no such file, a retry for a folder, a
    refusal the model reads for a file the guard will not open."""
    try:
        return read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ModelRetry(f"'{_shown(found)}' is a folder; use list_files.") from None
    except TextFileError as exc:
        raise ToolFailed(f"Refused: {exc}.") from None


def _read(deps: CoDeps, scope: Scope, found: Resolved) -> str:
    text = _current(deps, scope, found)
    if text is None:
        raise ModelRetry(f"No file '{_shown(found)}'. Use list_files to see what exists.")
    return text


def read_file(ctx: RunContext[CoDeps], path: str, page: int = 1) -> Any:
    """Read a text file in the workspace (or a read root), with line numbers; a PNG, JPEG,
    GIF or WebP image comes back as an image.

    Args:
        path: Path relative to the notebook's folder, or absolute inside a read root.
        page: Page of a long file (500 lines per page), starting at 1.
    """
    scope = files_scope(ctx.deps)
    found = guarded(ctx.deps, "read_file", path, scope, "read")
    if found.path.suffix.lower() in IMAGE_SUFFIXES:
        return _read_image(ctx, scope, found)
    lines = _read(ctx.deps, scope, found).split("\n")
    part = paginate(lines, page, READ_PAGE_LINES)
    if (end := part.past_end()) is not None:
        return end
    numbered = [f"{i:>6}\t{line}" for i, line in enumerate(part.items, start=part.start + 1)]
    header = (
        f"{_shown(found)} (lines {part.start + 1}-{part.start + len(part.items)} of {part.total})"
    )
    return result(
        header + "\n" + "\n".join(numbered),
        count=len(part.items),
        page=page,
        has_more=part.has_more,
        path=_shown(found),
    )


def _read_image(ctx: RunContext[CoDeps], scope: Scope, found: Resolved) -> Any:
    """An image file as the model can take it: downscaled to the image limit, sent as an
    image, or as one line ("PNG 640x480 image file plot.png") to a model that reads none."""
    from ..notebook import model_accepts_images, prepare_image

    shown = _shown(found)
    limit = f"images over {IMAGE_FILE_MAX_BYTES:,} bytes are not read"
    data = _opened(
        found,
        lambda: read_bytes(
            scope, found.root, found.rel, IMAGE_FILE_MAX_BYTES, shown=shown, limit=limit
        ),
    )
    if data is None:
        raise ModelRetry(f"No file '{shown}'. Use list_files to see what exists.")
    image = prepare_image(data, f"image file {shown}")
    if image is None:
        raise ToolFailed(f"'{shown}' is not a PNG, JPEG, GIF or WebP image that can be read.")
    if not model_accepts_images(ctx.model, ctx.deps.settings.model_accepts_images):
        return {
            "display": f"{image.describe()} (not sent: this model reads no images)",
            "path": shown,
        }
    return [f"{image.describe()} (attached as an image)", image.binary()]


def _glob_matches(pattern: str, rel: str) -> bool:
    """A pattern without '/' matches names at any depth; otherwise the relative path."""
    if "/" not in pattern:
        return fnmatchcase(rel.rsplit("/", 1)[-1], pattern)
    return fnmatchcase(rel, pattern) or (
        pattern.startswith("**/") and fnmatchcase(rel, pattern[3:])
    )


@dataclass(frozen=True)
class _Listed:
    """A file a walk found, with its stat from the folder that listed it."""

    found: Resolved
    """Where it is."""
    stat: os.stat_result
    """Its lstat (of the link's target for a link inside the root)."""


def _files(deps: CoDeps, tool: str, glob: str) -> tuple[Scope, list[_Listed]]:
    if not glob.strip():
        raise ModelRetry("Give a glob such as '*.py' or 'data/*.csv'.")
    scope = files_scope(deps)
    found = [
        _Listed(Resolved(root.path / rel, root, rel), st)
        for root in scope.roots
        for rel, st in walk(scope, root)
        if _glob_matches(glob, rel)
    ]
    found.sort(key=lambda f: (f.found.root.label != "workspace", str(f.found.path)))
    where = ", ".join(str(r.path) for r in scope.roots)
    record_access(
        deps, tool=tool, action="read", target=where, decision="auto",
        detail=f"glob {glob!r}: {len(found)} files in scope",
    )  # fmt: skip
    return scope, found


def list_files(ctx: RunContext[CoDeps], glob: str = "*", page: int = 1) -> dict[str, Any]:
    """List files in the workspace and read roots whose path matches a glob.

    Args:
        glob: A pattern without '/' matches file names at any depth ('*.csv'); one with '/'
            matches the path relative to its root ('data/*.csv').
        page: Page of the list (100 per page), starting at 1.
    """
    scope, files = _files(ctx.deps, "list_files", glob)
    part = paginate(files, page, LIST_PAGE)
    if not part.total:
        return result(f"No files in scope match '{glob}'.", count=0, page=page)
    if (end := part.past_end()) is not None:
        return end
    lines = [f"{part.total} files match '{glob}' (page {page} of {part.pages}):"]
    for f in part.items:
        if f.stat.st_nlink > 1 and not scope.protection.hard_links:
            # Its size would be that of a file that may lie outside: not shown either.
            lines.append(f"- {_shown(f.found)} ({f.stat.st_nlink} hard links: not read)")
        else:
            lines.append(f"- {_shown(f.found)} ({f.stat.st_size:,} bytes)")
    return result(
        "\n".join(lines),
        count=part.total,
        page=page,
        has_more=part.has_more,
        files=[_shown(f.found) for f in part.items],
    )


def grep(
    ctx: RunContext[CoDeps],
    pattern: str,
    glob: str = "*",
    page: int = 1,
    ignore_case: bool = False,
) -> dict[str, Any]:
    """Search text files in the workspace and read roots for a regular expression.

    Args:
        pattern: A Python regular expression, matched against each line.
        glob: Which files to search, as for list_files.
        page: Page of matches (50 per page), starting at 1.
        ignore_case: Match without regard to case.
    """
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ModelRetry(f"Invalid regular expression {pattern!r}: {exc}.") from None
    matches: list[str] = []
    skipped = linked = 0
    scope, files = _files(ctx.deps, "grep", glob)
    for f in files:
        try:
            text = read_text(
                scope,
                f.found.root,
                f.found.rel,
                ctx.deps.settings.file_max_bytes,
                shown=f.found.rel,
            )
        except (OSError, TextFileError):
            if f.stat.st_nlink > 1 and not scope.protection.hard_links:
                linked += 1
            else:
                skipped += 1
            continue
        for n, line in enumerate(text.split("\n"), start=1):
            if regex.search(line):
                shown = line.strip()
                if len(shown) > _LINE_CHARS:
                    shown = shown[: _LINE_CHARS - 1] + "…"
                matches.append(f"{_shown(f.found)}:{n}: {shown}")
    part = paginate(matches, page, GREP_PAGE)
    note = f" ({skipped} binary or oversized files skipped)" if skipped else ""
    if linked:
        note += (
            f" ({linked} files with several hard links not searched; setting "
            "`file_allow_hard_links`)"
        )
    if not part.total:
        return result(f"No lines match /{pattern}/ in '{glob}'.{note}", count=0, page=page)
    if (end := part.past_end()) is not None:
        return end
    head = f"{part.total} matching lines for /{pattern}/ in '{glob}' (page {page} of {part.pages}){note}:"
    return result(
        "\n".join([head, *part.items]), count=part.total, page=page, has_more=part.has_more
    )


# -- writes ------------------------------------------------------------------------


@dataclass
class _Change:
    """A write the person is asked to approve."""

    found: Resolved
    """Where it goes."""
    before: str | None
    """Current content, None for a new file."""
    after: str
    """Content after the change."""

    def diff(self) -> str:
        name = _shown(self.found)
        text = "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile="/dev/null" if self.before is None else f"a/{name}",
                tofile=f"b/{name}",
            )
        )
        if len(text) > _DIFF_CHARS:
            text = text[:_DIFF_CHARS] + f"\n… ({len(text) - _DIFF_CHARS:,} more characters of diff)"
        return text or f"(no change to {name})"

    def summary(self) -> str:
        before = (self.before or "").splitlines()
        after = self.after.splitlines()
        added = removed = 0
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after).get_opcodes():
            if op != "equal":
                removed += i2 - i1
                added += j2 - j1
        verb = "Created" if self.before is None else "Updated"
        return f"{verb} {_shown(self.found)} ({len(after)} lines, +{added} -{removed})"


def _target(ctx: RunContext[CoDeps], tool: str, path: str) -> tuple[Scope, Resolved]:
    scope = files_scope(ctx.deps)
    return scope, guarded(ctx.deps, tool, path, scope, "write")


def _fits(ctx: RunContext[CoDeps], found: Resolved, text: str) -> None:
    size, cap = len(text.encode("utf-8")), ctx.deps.settings.file_max_bytes
    if size > cap:
        raise ToolFailed(
            f"Refused: the new content of '{_shown(found)}' is {size:,} bytes; files over "
            f"{cap:,} bytes are not written (setting `file_max_bytes`)."
        )


def _plan_write(ctx: RunContext[CoDeps], path: str, content: str) -> _Change:
    scope, found = _target(ctx, "write_file", path)
    _fits(ctx, found, content)
    return _Change(found, _current(ctx.deps, scope, found), content)


def _plan_edit(
    ctx: RunContext[CoDeps], path: str, old: str, new: str, replace_all: bool
) -> _Change:
    scope, found = _target(ctx, "edit_file", path)
    before = _current(ctx.deps, scope, found)
    if before is None:
        raise ModelRetry(f"No file '{_shown(found)}' to edit; use write_file to create it.")
    if not old:
        raise ModelRetry("`old` is empty; give the exact text to replace.")
    count = before.count(old)
    if count == 0:
        raise ModelRetry(
            f"The text to replace was not found in '{_shown(found)}'. Read the file and copy "
            "the exact text, including whitespace (without line numbers)."
        )
    if count > 1 and not replace_all:
        raise ModelRetry(
            f"The text to replace occurs {count} times in '{_shown(found)}'. Include more "
            "surrounding text to pick one, or set replace_all."
        )
    after = before.replace(old, new) if replace_all else before.replace(old, new, 1)
    _fits(ctx, found, after)
    return _Change(found, before, after)


def _ask_write(ctx: RunContext[CoDeps], path: str, content: str) -> None:
    # Runs before the approval prompt: a refused or impossible write never reaches the
    # person, and an allowed one carries its diff into the approval card.
    if not ctx.tool_call_approved:
        raise ApprovalRequired(metadata={"detail": _plan_write(ctx, path, content).diff()})


def _ask_edit(
    ctx: RunContext[CoDeps], path: str, old: str, new: str, replace_all: bool = False
) -> None:
    if not ctx.tool_call_approved:
        change = _plan_edit(ctx, path, old, new, replace_all)
        raise ApprovalRequired(metadata={"detail": change.diff()})


def _write(found: Resolved, text: str) -> None:
    try:
        replace_below(found.root.path, found.rel, text)
    except IsADirectoryError:
        raise ModelRetry(f"'{_shown(found)}' is a folder; give a file path.") from None
    except TextFileError as exc:
        raise ToolFailed(f"Refused: {exc}.") from None


def write_file(ctx: RunContext[CoDeps], path: str, content: str) -> dict[str, Any]:
    """Create or overwrite a text file in the workspace (asks the user first).

    Args:
        path: Path relative to the notebook's folder.
        content: The whole new content of the file.
    """
    change = _plan_write(ctx, path, content)  # again: the file may have changed meanwhile
    _write(change.found, content)
    return result(change.summary(), count=1, path=_shown(change.found))


def edit_file(
    ctx: RunContext[CoDeps], path: str, old: str, new: str, replace_all: bool = False
) -> dict[str, Any]:
    """Replace exact text in a file in the workspace (asks the user first).

    Args:
        path: Path relative to the notebook's folder.
        old: The exact text to replace; it must occur once unless replace_all is set.
        new: The replacement text.
        replace_all: Replace every occurrence instead of exactly one.
    """
    change = _plan_edit(ctx, path, old, new, replace_all)
    _write(change.found, change.after)
    return result(change.summary(), count=1, path=_shown(change.found))


def build(settings: Settings) -> ToolsetBuild:
    """The files toolset; always available (the scope settings decide what it reaches)."""
    ops = set(settings.scope_operations)
    tools: list[Tool[Any]] = [Tool(read_file), Tool(list_files), Tool(grep)]
    if ops & {"write", "create"}:
        tools.append(Tool(write_file, requires_approval=True, args_validator=_ask_write))
    if "write" in ops:
        tools.append(Tool(edit_file, requires_approval=True, args_validator=_ask_edit))
    if "read" not in ops:
        return ToolsetBuild("files", reason="`scope_operations` does not include read")
    toolset: FunctionToolset[Any] = FunctionToolset(tools)
    return ToolsetBuild("files", toolset, approval={t.name: t.requires_approval for t in tools})
