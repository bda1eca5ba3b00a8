"""The notebook's cells as the agent reads them: from the live page, else the saved file.

A cell is summarised for a model: its source in full, each output in a line or a few
(text clipped, an error as ``ename: evalue``, an image as ``PNG 640x480``), its tags.
The page clips output values before sending them (``labextension/src/outputs/notebook.ts``), so
a 300-cell notebook full of figures stays a small message.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ._page import PageError

__all__ = [
    "NotebookCell",
    "NotebookDocument",
    "PageLike",
    "cell_kind",
    "read_document",
    "source_hash",
]

_TEXT_CAP = 600
"""Characters of an output's text the model gets per output."""

CellKind = Literal["markdown", "python", "prompt", "shell", "magic", "raw"]


def source_hash(source: str) -> str:
    """The short hash of a cell's source that an edit names to prove what it read."""
    return hashlib.sha256(source.encode()).hexdigest()[:8]


def cell_kind(cell_type: str, source: str) -> CellKind:
    """What a cell is in a Co notebook: a code cell's first characters say how it runs."""
    if cell_type == "markdown":
        return "markdown"
    if cell_type != "code":
        return "raw"
    text = source.lstrip()
    if text.startswith(("%%python", "%python")):
        return "python"
    if text.startswith("!"):
        return "shell"
    if text.startswith("%"):
        return "magic"
    return "prompt"


@dataclass
class NotebookCell:
    """One cell as the agent reads it."""

    index: int
    """Position in the notebook, from 0."""
    id: str
    """The cell's nbformat id (what edits name)."""
    cell_type: str
    """nbformat's type: code, markdown or raw."""
    source: str
    """The cell's text as the person sees it now."""
    execution_count: int | None = None
    """``[n]`` of a code cell that ran."""
    outputs: list[str] = field(default_factory=list[str])
    """Each output summarised in a line or a few."""
    tags: list[str] = field(default_factory=list[str])
    """``metadata.tags``."""

    @property
    def kind(self) -> CellKind:
        return cell_kind(self.cell_type, self.source)

    @property
    def hash(self) -> str:
        return source_hash(self.source)


@dataclass
class NotebookDocument:
    """The notebook's cells and where they came from."""

    cells: list[NotebookCell]
    """Every cell, in order."""
    live: bool
    """True: the page's document now, unsaved edits included; False: the saved file."""
    path: str | None = None
    """The notebook's path as the server or the page names it."""
    dirty: bool = False
    """The page holds edits not saved yet."""

    def find(self, cell_id: str) -> NotebookCell | None:
        return next((c for c in self.cells if c.id == cell_id), None)


class PageLike(Protocol):
    """What answers for the page: the ``co.notebook`` comm, or a stand-in for it."""

    def absent(self) -> str | None: ...

    async def request(self, op: str, timeout: float = 15, **args: Any) -> dict[str, Any]: ...


async def read_document(
    page: PageLike | None, saved: str | None, workspace: Path
) -> NotebookDocument:
    """The live document when a page is connected, else the saved file.

    Raises PageError when neither can be read, with both reasons.
    """
    why = "no page with Co's JupyterLab extension shows this notebook"
    if page is not None:
        why = page.absent()  # None: a page of the kernel's own notebook answers
    if page is not None and why is None:
        try:
            reply = await page.request("read")
        except PageError as exc:
            why = f"the page could not be read ({exc})"
        else:
            raw = reply.get("cells")
            cells = [_cell(i, c) for i, c in enumerate(raw if isinstance(raw, list) else [])]
            path = reply.get("path")
            return NotebookDocument(
                cells, True, path if isinstance(path, str) else saved, reply.get("dirty") is True
            )
    file = _saved_file(saved, workspace)
    if file is None:
        where = f"its saved file {saved!r} was not found" if saved else "no notebook file is known"
        raise PageError(f"Cannot read the notebook: {why}, and {where}.")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PageError(f"Cannot read the notebook's saved file {file}: {exc}") from exc
    raw_cells = data.get("cells") if isinstance(data, dict) else None
    raw = raw_cells if isinstance(raw_cells, list) else []
    return NotebookDocument([_cell(i, c) for i, c in enumerate(raw)], False, str(saved))


def _saved_file(saved: str | None, workspace: Path) -> Path | None:
    """The file the server named (absolute, or relative to its root: the kernel's folder)."""
    if not saved:
        return None
    path = Path(saved)
    for candidate in (path, workspace / path, workspace / path.name):
        if candidate.is_file():
            return candidate
    return None


def _text(value: Any) -> str:
    """nbformat's multiline string: a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)  # pyright: ignore[reportUnknownVariableType]
    return value if isinstance(value, str) else ""


def _cell(index: int, raw: Any) -> NotebookCell:
    item: dict[str, Any] = raw if isinstance(raw, dict) else {}
    metadata = item.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    count = item.get("execution_count")
    outputs = item.get("outputs")
    return NotebookCell(
        index=index,
        id=str(item.get("id") or f"index-{index}"),
        cell_type=str(item.get("cell_type") or "code"),
        source=_text(item.get("source")),
        execution_count=count if isinstance(count, int) else None,
        outputs=[_summary(o) for o in (outputs if isinstance(outputs, list) else [])],
        tags=[str(t) for t in tags] if isinstance(tags, list) else [],  # pyright: ignore[reportUnknownVariableType]
    )


def _clip(text: str, cap: int = _TEXT_CAP) -> str:
    text = text.rstrip("\n")
    return text if len(text) <= cap else text[:cap] + f"… ({len(text) - cap} more characters)"


def _summary(raw: Any) -> str:
    """One output as a short text: what a person glancing at it would take in."""
    out: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kind = out.get("output_type")
    if kind == "stream":
        return f"{out.get('name', 'stdout')}: {_clip(_text(out.get('text')))}"
    if kind == "error":
        return f"error: {out.get('ename', '')}: {_clip(str(out.get('evalue', '')), 300)}"
    data: dict[str, Any] = out.get("data") if isinstance(out.get("data"), dict) else {}  # pyright: ignore[reportAssignmentType]
    meta: dict[str, Any] = out.get("metadata") if isinstance(out.get("metadata"), dict) else {}  # pyright: ignore[reportAssignmentType]
    images = [m for m in ("image/png", "image/jpeg", "image/gif", "image/svg+xml") if m in data]
    parts = [_image(m, data[m], meta.get(m)) for m in images]
    for mime in ("text/markdown", "text/plain"):
        if mime in data and not (images and mime == "text/plain"):
            parts.append(_clip(_text(data[mime])))
            break
    else:
        if not images and "text/html" in data:
            parts.append(f"HTML output ({len(_text(data['text/html']))} characters)")
    return "; ".join(parts) or f"{kind or 'output'} ({', '.join(data) or 'empty'})"


def _image(mime: str, value: Any, meta: Any) -> str:
    label = mime.split("/")[1].split("+")[0].upper()
    size = None
    if isinstance(meta, dict) and "width" in meta and "height" in meta:
        size = (meta["width"], meta["height"])
    elif mime == "image/png":
        size = _png_size(_text(value))
    return f"{label} {size[0]}x{size[1]}" if size else f"{label} image"


def _png_size(b64: str) -> tuple[int, int] | None:
    try:
        head = base64.b64decode(b64.replace("\n", "")[:32])
    except ValueError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    width, height = struct.unpack(">II", head[16:24])
    return width, height
