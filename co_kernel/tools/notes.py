"""Notes: search, list and read an Obsidian vault.

Registered when ``obsidian_vault_path`` names a folder. Read-only: no approval needed.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai import ModelRetry, RunContext, ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from ..exceptions import TextFileError
from ..inert import inert_code
from ..session_state import (  # at run time: pydantic-ai reads the tools' annotations
    CoDeps,
    ExtrasKey,
)
from . import ToolsetBuild
from ._audit import record_access
from ._paging import paginate, result
from ._scope import Protection, guarded, read_text
from ._vault import BROAD_QUERY, Note, VaultIndex, keyword_patterns

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["build", "list_notes", "read_note", "search_notes"]

SEARCH_PAGE = 10
LIST_PAGE = 50
READ_PAGE_LINES = 400
_LINES_PER_NOTE = 3
_LINE_CHARS = 200


def _vault_path(settings: Settings) -> Path | None:
    raw = settings.obsidian_vault_path
    return Path(os.path.realpath(Path(raw).expanduser())) if raw is not None else None


_INDEX = ExtrasKey[tuple[VaultIndex, Path | None]]("notes_index")
"""The session's vault index, with the ``obsidian_vault_path`` setting it was made for."""


def _index(deps: CoDeps) -> VaultIndex:
    # The vault's path is resolved once for its setting: were it resolved on every call, a
    # vault inside the workspace swapped for a link to elsewhere would move the index there.
    # Resolved once, such a swap makes the descriptor walk from `/` fail instead.
    configured = deps.settings.obsidian_vault_path
    entry = deps.extras.get(_INDEX)
    cached = entry[0] if entry is not None else None
    if entry is not None and entry[1] == configured:
        root: Path | None = entry[0].root
    else:
        root = _vault_path(deps.settings)
    if root is None or not root.is_dir():
        raise ToolFailed(f"The vault folder {root} is not there any more (obsidian_vault_path).")
    if cached is None or cached.root != root:
        if cached is not None:
            cached.close()
        protection = Protection.of(deps.settings, deps.workspace)
        cached = VaultIndex(root, deps.settings.file_max_bytes, protection=protection)
        deps.extras[_INDEX] = (cached, configured)
    return cached


def _tags(note: Note) -> str:
    return " ".join(f"#{t}" for t in note.tags)


def _matching_lines(index: VaultIndex, note: Note, query: str) -> list[str]:
    patterns = keyword_patterns(query)
    if not patterns:
        return []
    lower_lines = note.lower.split("\n")
    hits = [i for i, line in enumerate(lower_lines) if any(p.search(line) for p in patterns)]
    if not hits:
        return []
    try:  # show the lines as written, not lower-cased
        raw = index.read(note.rel)
        lines = raw.decode("utf-8", errors="replace").split("\n")  # as the index read it
    except (OSError, TextFileError):
        lines = lower_lines
    if len(lines) != len(lower_lines):
        lines = lower_lines
    out: list[str] = []
    for i in hits[:_LINES_PER_NOTE]:
        text = lines[i].strip()
        if len(text) > _LINE_CHARS:
            text = text[: _LINE_CHARS - 1] + "…"
        out.append(f"   L{i + 1}: {text}")
    if len(hits) > _LINES_PER_NOTE:
        out.append(f"   … {len(hits) - _LINES_PER_NOTE} more matching lines")
    return out


def search_notes(
    ctx: RunContext[CoDeps], query: str, tag: str | None = None, page: int = 1
) -> dict[str, Any]:
    """Search the Obsidian vault for notes containing ALL the keywords as whole words.

    Case-insensitive. Shows each note's title, path, tags and matching lines with numbers.

    Args:
        query: Keywords separated by spaces; every one must occur in the note.
        tag: Only notes with this tag (front-matter or inline #tag; nested tags count).
        page: Page of results, starting at 1.
    """
    if not query.strip() and not (tag and tag.strip()):
        raise ModelRetry("Give some keywords to search for, or a tag.")
    index = _index(ctx.deps)
    if query.strip():
        found = index.search(query, tag)
    else:
        from ._vault import tag_matches

        found = [(n, 0) for n in index.refresh() if tag_matches(n, tag or "")]
    record_access(
        ctx.deps, tool="search_notes", action="read", target=str(index.root), decision="auto",
        detail=f"{len(found)} notes matched",
    )  # fmt: skip
    part = paginate(found, page, SEARCH_PAGE)
    what = f'"{query.strip()}"' if query.strip() else ""
    if tag:
        what = f"{what} with tag #{tag.lstrip('#')}".strip()
    if not part.total:
        return result(f"No notes match {what}.", count=0, page=page)
    if (end := part.past_end()) is not None:
        return end
    lines = [f"Found {part.total} notes matching {what} (page {page} of {part.pages}):", ""]
    if part.total > BROAD_QUERY:
        lines[1:1] = [
            "A broad query, ranked by titles only: add keywords or a tag to narrow it.",
            "",
        ]
    for n, (note, _) in enumerate(part.items, start=part.start + 1):
        tags = f" {_tags(note)}" if note.tags else ""
        lines.append(f"{n}. **{note.title}** ({note.rel}){tags}")
        lines.extend(_matching_lines(index, note, query))
    return result(
        "\n".join(lines),
        count=part.total,
        page=page,
        has_more=part.has_more,
        notes=[note.rel for note, _ in part.items],
    )


def list_notes(ctx: RunContext[CoDeps], tag: str | None = None, page: int = 1) -> dict[str, Any]:
    """List the notes of the Obsidian vault with their titles and tags.

    Args:
        tag: Only notes with this tag (nested tags count: `project` lists `project/alpha`).
        page: Page of the list, starting at 1.
    """
    from ._vault import tag_matches

    index = _index(ctx.deps)
    notes = index.refresh()
    if tag:
        notes = [n for n in notes if tag_matches(n, tag)]
    record_access(
        ctx.deps, tool="list_notes", action="read", target=str(index.root), decision="auto",
        detail=f"{len(notes)} notes listed",
    )  # fmt: skip
    part = paginate(notes, page, LIST_PAGE)
    label = f" tagged #{tag.lstrip('#')}" if tag else ""
    if not part.total:
        return result(f"No notes{label} in the vault.", count=0, page=page)
    if (end := part.past_end()) is not None:
        return end
    lines = [f"{part.total} notes{label} (page {page} of {part.pages}):", ""]
    for note in part.items:
        tags = f" {_tags(note)}" if note.tags else ""
        lines.append(f"- **{note.title}** ({note.rel}){tags}")
    return result("\n".join(lines), count=part.total, page=page, has_more=part.has_more)


def read_note(ctx: RunContext[CoDeps], path: str, page: int = 1) -> dict[str, Any]:
    """Read one note of the Obsidian vault.

    Args:
        path: The note's path relative to the vault, as search_notes or list_notes show it
            (a name without an extension gets `.md`).
        page: Page of a long note (400 lines per page), starting at 1.
    """
    index = _index(ctx.deps)
    scope = index.scope()
    if path.strip() and "." not in path.rpartition("/")[2]:
        path += ".md"  # "Reading/Deep Work" names the note as Obsidian shows it
    found = guarded(ctx.deps, "read_note", path, scope, "read")
    try:
        text = read_text(
            scope, found.root, found.rel, ctx.deps.settings.file_max_bytes, shown=found.rel
        )
    except FileNotFoundError:
        known = list(index.notes) or [n.rel for n in index.refresh()]
        close = difflib.get_close_matches(found.rel, known, n=3, cutoff=0.5)
        hint = (
            f" Did you mean: {', '.join(close)}?" if close else " Use list_notes or search_notes."
        )
        raise ModelRetry(f"No note '{found.rel}' in the vault.{hint}") from None
    except IsADirectoryError:
        raise ModelRetry(f"'{found.rel}' is a folder; use list_notes.") from None
    except TextFileError as exc:
        raise ToolFailed(str(exc)) from None
    lines = text.split("\n")
    part = paginate(lines, page, READ_PAGE_LINES)
    if (end := part.past_end()) is not None:
        return end
    body = "\n".join(part.items)
    if part.has_more or page > 1:
        body = (
            f"[{found.rel}: lines {part.start + 1}-{part.start + len(part.items)} "
            f"of {part.total}]\n{body}"
        )
    return result(body, count=1, page=page, has_more=part.has_more, path=found.rel)


def build(settings: Settings) -> ToolsetBuild:
    """The notes toolset, when a vault is configured."""
    root = _vault_path(settings)
    if root is None:
        return ToolsetBuild(
            "notes", reason="set `obsidian_vault_path` (CO_OBSIDIAN_VAULT_PATH) to your vault"
        )
    if not root.is_dir():
        return ToolsetBuild(
            "notes", reason=f"`obsidian_vault_path` {inert_code(root)} is not a folder"
        )
    toolset: FunctionToolset[Any] = FunctionToolset([search_notes, list_notes, read_note])
    return ToolsetBuild(
        "notes",
        toolset,
        approval={"search_notes": False, "list_notes": False, "read_note": False},
    )
