"""The notebook Co lives in: read every cell, propose cell edits as reviewed diffs, run cells.

`read_notebook` reads the document as the person sees it now, through the page that shows
it (Co's JupyterLab extension, ``co_kernel.notebook.NotebookPage``), unsaved edits
included; with no page, the saved file, labelled so. Reading runs without asking.

`insert_cells`, `edit_cell`, `delete_cells`, `move_cell` and `run_cell` ask first: the
card shows a per-cell diff, and once approved the page applies the change to the live
document as one undoable step (undo in the notebook restores it). When one call inserts
or deletes several cells, the person may reject some of them on the card: the approved
call applies the others, still as one step, and its result names both. A cell the agent
changes is named by its id and the hash of the source it read (`read_notebook` shows
both): if the cell changed since, the call is refused and the model reads again. These
tools are offered only while a page is connected; a headless client (nbclient,
papermill, `jupyter console`) has no live document to edit, unless it replays a session
recorded with one, whose recorded page answers then stand in (``_page_replay``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, Field

# Tool signatures are read at run time by pydantic-ai, so these imports are real ones.
from pydantic_ai import ApprovalRequired, ModelRetry, RunContext, ToolFailed

from ..notebook import (
    NotebookCell,
    NotebookDocument,
    PageError,
    PythonRun,
    cell_kind,
    read_document,
)
from ..session_state import CoDeps, ExtrasKey
from . import ToolsetBuild
from ._errors import session_redactor
from ._page_replay import REPLAYED_PAGE, CallPage, page_offered

if TYPE_CHECKING:
    from pydantic_ai.tools import ToolDefinition

    from ..config import Settings

__all__ = ["CellRef", "NewCell", "build"]

_READ_CHARS = 40_000
"""What one read returns at most; the rest is named with the range that reads it."""

_DIFF_CHARS = 20_000

NO_PAGE = (
    "Editing or running cells needs the notebook open in JupyterLab or Notebook 7 with Co's "
    "extension; this kernel is driven without one (nbclient, papermill, jupyter console), "
    "so its cells cannot be inserted, edited, deleted, moved or run. Show the person the "
    "code or text to add instead."
)

CellKind = Literal["markdown", "python", "prompt"]


class NewCell(BaseModel):
    """A cell to insert."""

    kind: CellKind = Field(
        description="markdown; python (a `%%python` cell, run in the kernel's Python); "
        "prompt (a question to Co)"
    )
    source: str = Field(description="The cell's text (without `%%python` for python cells)")


class CellRef(BaseModel):
    """A cell as `read_notebook` showed it."""

    cell_id: str = Field(description="The cell's id from read_notebook")
    read_hash: str = Field(description="The hash read_notebook showed for the cell")


# -- reading ------------------------------------------------------------------------


async def read_notebook(
    ctx: RunContext[CoDeps], start: int = 0, end: int | None = None, search: str | None = None
) -> dict[str, Any]:
    """Read the notebook's cells as the person sees them now (unsaved edits included):
    index, id, kind, source, execution count, outputs summarised, tags, and the hash an
    edit must name. `start`/`end` pick a range of indexes (end excluded); `search` keeps
    the cells whose source or outputs contain it (case-insensitive)."""
    page = CallPage(ctx)
    doc = await _document(ctx, page)
    _note_replayed(ctx, page)
    cells = doc.cells[start:end]
    if search:
        needle = search.lower()
        cells = [c for c in cells if needle in (c.source + "\n".join(c.outputs)).lower()]
    parts = [_heading(doc)]
    used = 0
    shown = 0
    for cell in cells:
        text = _format_cell(cell)
        if used + len(text) > _READ_CHARS and shown:
            parts.append(
                f"… {len(cells) - shown} more cells (from index {cell.index}): read again "
                f"with start={cell.index}."
            )
            break
        parts.append(text)
        used += len(text)
        shown += 1
    if not cells:
        parts.append("No cell matches." if search else "No cells in this range.")
    display = session_redactor(ctx.deps).redact("\n\n".join(parts))
    return {"display": display, "cells": len(doc.cells), "shown": shown, "live": doc.live}


def _heading(doc: NotebookDocument) -> str:
    name = doc.path or "this notebook"
    if doc.live:
        state = "the page's document now" + (", with unsaved edits" if doc.dirty else "")
        return f"Notebook {name}: {len(doc.cells)} cells ({state})."
    return (
        f"Notebook {name}: {len(doc.cells)} cells (the SAVED version on disk: no page with "
        f"Co's extension is connected, so unsaved edits are not seen). {NO_PAGE}"
    )


def _format_cell(cell: NotebookCell) -> str:
    head = f"--- cell {cell.index} · {cell.kind} · id {cell.id} · hash {cell.hash}"
    if cell.execution_count is not None:
        head += f" · [{cell.execution_count}]"
    if cell.tags:
        head += f" · tags: {', '.join(cell.tags)}"
    lines = [head, cell.source or "(empty)"]
    lines += ["  => " + "\n     ".join(o.splitlines() or [""]) for o in cell.outputs]
    return "\n".join(lines)


async def _document(ctx: RunContext[CoDeps], page: CallPage) -> NotebookDocument:
    try:
        return await read_document(page, ctx.deps.notebook_path, ctx.deps.workspace)
    except PageError as exc:
        raise ToolFailed(str(exc)) from None


# -- editing ------------------------------------------------------------------------


def _page(ctx: RunContext[CoDeps]) -> CallPage:
    page = CallPage(ctx)
    if not page.connected():
        raise ToolFailed(NO_PAGE)
    return page


async def _live(ctx: RunContext[CoDeps], page: CallPage) -> NotebookDocument:
    doc = await _document(ctx, page)
    if not doc.live:  # the page went away between the check and the read
        raise ToolFailed(NO_PAGE)
    return doc


def _note_replayed(ctx: RunContext[CoDeps], page: CallPage) -> None:
    """Say under the call's card when the recorded page answered, not a page."""
    if page.replayed and ctx.tool_call_id:
        note = {"data": {"text/plain": REPLAYED_PAGE}, "metadata": {}, "display_id": None}
        ctx.deps.displays.setdefault(ctx.tool_call_id, []).append(note)


def _target(doc: NotebookDocument, ref: CellRef) -> NotebookCell:
    """The cell ``ref`` names, refused when it changed since the model read it."""
    cell = doc.find(ref.cell_id)
    if cell is None:
        raise ModelRetry(
            f"No cell with id {ref.cell_id!r} in the notebook now (it has {len(doc.cells)} "
            "cells); call read_notebook to see them."
        )
    if cell.hash != ref.read_hash:
        raise ModelRetry(
            f"Refused: cell {ref.cell_id} (index {cell.index}) changed since you read it "
            f"(you read hash {ref.read_hash}, it is {cell.hash} now). Call read_notebook "
            "and propose the change against what it holds now."
        )
    return cell


def _full_source(cell: NewCell) -> str:
    if cell.kind == "python" and not cell.source.lstrip().startswith(("%%python", "%python")):
        return f"%%python\n{cell.source}"
    return cell.source


def _cell_type(kind: CellKind) -> str:
    return "markdown" if kind == "markdown" else "code"


def _runs_as(kind: CellKind | str, source: str) -> str:
    """What a proposed cell is once in the notebook, by what it will run, whatever kind the
    model named: a "prompt" whose text starts with `%%python` runs as Python under Run
    All, so the card says python; `!` says shell, another `%` magic."""
    return cell_kind("markdown" if kind == "markdown" else "code", source)


def _diff(before: str | None, after: str | None, before_name: str, after_name: str) -> str:
    lines = difflib.unified_diff(
        (before or "").splitlines(),
        (after or "").splitlines(),
        fromfile="/dev/null" if before is None else before_name,
        tofile="/dev/null" if after is None else after_name,
        lineterm="",
    )
    return "".join(f"{line}\n" for line in lines)


def _label(cell: NotebookCell) -> str:
    return f"cell {cell.index} ({cell.kind}, id {cell.id})"


def _clip_diff(text: str) -> str:
    if len(text) > _DIFF_CHARS:
        return text[:_DIFF_CHARS] + f"\n… ({len(text) - _DIFF_CHARS:,} more characters of diff)"
    return text


@dataclass
class _Proposal:
    """A change as the person is asked about it and as the page applies it."""

    detail: str
    """What the card shows: a diff per cell."""
    changes: list[dict[str, Any]]
    """What the page applies, each naming the source it expects."""
    done: str
    """What the model is told once it is applied."""
    parts: list[str] = field(default_factory=list[str])
    """Each cell's diff when the call touches several cells: the person may take some."""
    names: list[str] = field(default_factory=list[str])
    """How the model's result names each part."""
    pick: Callable[[list[int]], list[dict[str, Any]]] | None = None
    """The changes that apply only the parts accepted (indexes into ``parts``)."""

    def metadata(self) -> dict[str, Any]:
        """What the approval card gets: the diff, and each cell's diff when there are several."""
        meta: dict[str, Any] = {"detail": _clip_diff(self.detail)}
        if len(self.parts) > 1:
            meta["parts"] = [_clip_diff(p) for p in self.parts]
        return meta


_PROPOSALS = ExtrasKey[dict[str, _Proposal]]("notebook_proposals")
"""Proposals the person is asked about, by call id, so the approved call applies them."""


@dataclass
class _Applied:
    """What the page applied of a proposal."""

    proposal: _Proposal
    reply: dict[str, Any]
    """The page's answer (the ids of inserted cells)."""
    accepted: list[int] | None = None
    """The parts the person accepted, when they rejected some; None: all of them."""

    def rejected_note(self) -> str:
        """What the model is told about the parts the person rejected, if any."""
        if self.accepted is None:
            return ""
        names = [n for i, n in enumerate(self.proposal.names) if i not in self.accepted]
        return (
            f" The person rejected {', '.join(names)}: not applied. Do not propose "
            f"{'it' if len(names) == 1 else 'them'} again unless they ask."
        )


_KEEP_PROPOSALS = 50
"""Proposals remembered for their approval; a denied one is never asked for again."""

UNDO = "Undo in the notebook (Ctrl+Z in command mode) reverts it."


async def _propose(
    ctx: RunContext[CoDeps], plan: Callable[[NotebookDocument], _Proposal]
) -> _Applied:
    """Ask about the change ``plan`` makes of the live notebook; once approved, apply it.

    The approved call applies what the person saw, without reading the notebook again:
    the page refuses it if a cell it names changed meanwhile (each change carries the
    source it expects). Of a proposal with several parts it applies the ones the person
    accepted (the approval's metadata, ``turn/_approval_batch.py``), in one edit.
    """
    proposals = ctx.deps.extras.get_or_create(_PROPOSALS, dict[str, _Proposal])
    proposal = proposals.pop(ctx.tool_call_id or "", None) if ctx.tool_call_approved else None
    page = _page(ctx)
    if proposal is None:
        proposal = plan(await _live(ctx, page))
        if not ctx.tool_call_approved:
            page.check_edit(proposal.changes, proposal.pick)
            proposals[ctx.tool_call_id or ""] = proposal
            for stale in list(proposals)[:-_KEEP_PROPOSALS]:
                del proposals[stale]
            raise ApprovalRequired(metadata=proposal.metadata())
    accepted = _accepted(ctx.tool_call_metadata, len(proposal.parts))
    if accepted == []:  # the approval batch makes this a denial; never an empty edit
        raise ToolFailed("The person rejected every cell of this proposal; nothing changed.")
    changes = proposal.changes
    if accepted is not None and proposal.pick is not None:
        changes = proposal.pick(accepted)
    try:
        reply = await page.request("edit", changes=changes)
    except PageError as exc:
        raise ToolFailed(f"The notebook was not changed: {exc}.") from None
    finally:
        _note_replayed(ctx, page)
    return _Applied(proposal, reply, accepted)


def _accepted(metadata: Any, parts: int) -> list[int] | None:
    """The parts the approval accepted when it left some out; None: the whole proposal."""
    value = cast(dict[str, Any], metadata).get("accepted") if isinstance(metadata, dict) else None
    if not isinstance(value, list):
        return None
    accepted = sorted({i for i in cast(list[Any], value) if isinstance(i, int) and 0 <= i < parts})
    return accepted if len(accepted) < parts else None


async def insert_cells(ctx: RunContext[CoDeps], index: int, cells: list[NewCell]) -> dict[str, Any]:
    """Insert new cells before position `index` (the number of cells appends them).
    Needs the person's approval; they see the new cells as a diff."""

    def plan(doc: NotebookDocument) -> _Proposal:
        if not cells:
            raise ModelRetry("Give at least one cell to insert.")
        if not 0 <= index <= len(doc.cells):
            raise ModelRetry(f"index must be between 0 and {len(doc.cells)} (the number of cells).")
        sources = [_full_source(c) for c in cells]
        pairs = list(zip(cells, sources, strict=True))
        parts = [
            _diff(None, s, "", f"new cell {index + i} ({_runs_as(c.kind, s)})")
            for i, (c, s) in enumerate(pairs)
        ]
        new = [{"cell_type": _cell_type(c.kind), "source": s} for c, s in pairs]
        done = f"Inserted {len(new)} cell(s) at index {index}"

        def pick(accepted: list[int]) -> list[dict[str, Any]]:
            return [{"op": "insert", "index": index, "cells": [new[i] for i in accepted]}]

        names = [
            f"cells[{i}] ({_runs_as(c.kind, s)}: {_first_line(c.source)})"
            for i, (c, s) in enumerate(pairs)
        ]
        changes = [{"op": "insert", "index": index, "cells": new}]
        return _Proposal("".join(parts), changes, done, parts, names, pick)

    applied = await _propose(ctx, plan)
    reply = applied.reply
    ids = [str(i) for i in reply.get("ids", [])] if isinstance(reply.get("ids"), list) else []
    named = f" (ids {', '.join(ids)})" if ids else ""
    done = applied.proposal.done
    if applied.accepted is not None:
        taken = ", ".join(f"cells[{i}]" for i in applied.accepted)
        done = (
            f"Inserted {len(applied.accepted)} of the {len(cells)} proposed cells at index "
            f"{index}: {taken} of your call"
        )
    return {
        "display": f"{done}{named}.{applied.rejected_note()} {UNDO}",
        "ids": ids,
        "inserted": list(range(len(cells))) if applied.accepted is None else applied.accepted,
    }


def _first_line(source: str) -> str:
    first = source.strip().split("\n", 1)[0] if source.strip() else "(empty)"
    return repr(first if len(first) <= 40 else first[:39] + "…")


async def edit_cell(
    ctx: RunContext[CoDeps],
    cell_id: str,
    read_hash: str,
    source: str,
    kind: CellKind | None = None,
) -> dict[str, Any]:
    """Replace the source of one cell (and its kind, if given) with `source`. Name the cell
    by the id and hash read_notebook showed. Needs the person's approval (they see a diff)."""

    def plan(doc: NotebookDocument) -> _Proposal:
        cell = _target(doc, CellRef(cell_id=cell_id, read_hash=read_hash))
        after = _full_source(NewCell(kind=kind, source=source)) if kind else source
        if after == cell.source and (kind is None or _cell_type(kind) == cell.cell_type):
            raise ModelRetry(f"Cell {cell.id} already holds exactly that text: nothing to change.")
        label = _label(cell)
        # The new side is named by what the cell will run once changed (its new text can
        # make a prompt cell Python), the old side by what it runs now.
        runs = _runs_as(kind or cell.kind, after)
        detail = _diff(cell.source, after, label, f"cell {cell.index} ({runs}, id {cell.id})")
        change: dict[str, Any] = {
            "op": "set",
            "id": cell.id,
            "expect": cell.source,
            "source": after,
        }
        if kind:
            change["cell_type"] = _cell_type(kind)
        return _Proposal(detail, [change], f"Edited cell {cell.index} (id {cell.id}).")

    applied = await _propose(ctx, plan)
    return {"display": f"{applied.proposal.done} {UNDO}"}


async def delete_cells(ctx: RunContext[CoDeps], cells: list[CellRef]) -> dict[str, Any]:
    """Delete cells, each named by the id and hash read_notebook showed. Needs the
    person's approval (they see what is removed)."""

    def plan(doc: NotebookDocument) -> _Proposal:
        if not cells:
            raise ModelRetry("Name at least one cell to delete.")
        targets = [_target(doc, ref) for ref in cells]
        parts = [_diff(c.source, None, _label(c), "") for c in targets]
        changes = [{"op": "delete", "id": c.id, "expect": c.source} for c in targets]
        shown = ", ".join(str(c.index) for c in targets)
        names = [f"cell {c.index} (id {c.id})" for c in targets]

        def pick(accepted: list[int]) -> list[dict[str, Any]]:
            return [changes[i] for i in accepted]

        return _Proposal("".join(parts), changes, f"Deleted cell(s) {shown}.", parts, names, pick)

    applied = await _propose(ctx, plan)
    done = applied.proposal.done
    if applied.accepted is not None:
        taken = ", ".join(applied.proposal.names[i] for i in applied.accepted)
        done = f"Deleted {len(applied.accepted)} of the {len(cells)} proposed cells: {taken}."
    return {"display": f"{done}{applied.rejected_note()} {UNDO}"}


async def move_cell(
    ctx: RunContext[CoDeps], cell_id: str, read_hash: str, to_index: int
) -> dict[str, Any]:
    """Move one cell (named by the id and hash read_notebook showed) to position
    `to_index`. Needs the person's approval."""

    def plan(doc: NotebookDocument) -> _Proposal:
        cell = _target(doc, CellRef(cell_id=cell_id, read_hash=read_hash))
        if not 0 <= to_index < len(doc.cells):
            raise ModelRetry(f"to_index must be between 0 and {len(doc.cells) - 1}.")
        first = cell.source.splitlines()[0] if cell.source else "(empty)"
        detail = f"Move {_label(cell)} to index {to_index}.\n\n{first}"
        change = {"op": "move", "id": cell.id, "expect": cell.source, "to": to_index}
        return _Proposal(
            detail, [change], f"Moved cell {cell.id} from index {cell.index} to {to_index}."
        )

    applied = await _propose(ctx, plan)
    return {"display": f"{applied.proposal.done} {UNDO}"}


async def run_cell(ctx: RunContext[CoDeps], cell_id: str, read_hash: str) -> Any:
    """Run one `%%python` cell (named by the id and hash read_notebook showed) in the
    kernel's namespace; its outputs appear in that cell and come back here. Needs the
    person's approval, as run_python does."""
    page = _page(ctx)
    doc = await _live(ctx, page)
    cell = _target(doc, CellRef(cell_id=cell_id, read_hash=read_hash))
    if cell.kind != "python":
        raise ModelRetry(
            f"Cell {cell.id} is a {cell.kind} cell; only `%%python` cells can be run this way."
        )
    code = _python_code(cell.source)
    if not ctx.tool_call_approved:
        detail = (
            f"Runs {_label(cell)} on the host, in this kernel's Python namespace "
            f"(not in the sandbox).\n\n{cell.source}"
        )
        raise ApprovalRequired(metadata={"detail": detail})
    notebook = ctx.deps.notebook
    assert notebook is not None  # _live checked the page
    run = await notebook.run_tool_code(code)
    # The cell shows `[n]:` from the kernel's counter, as when the person runs it.
    count = notebook.take_count()
    redact = session_redactor(ctx.deps).redact
    shown = [_redacted(o, redact) for o in _cell_outputs(run, count)]
    shown_in_cell = True
    try:
        change = {"op": "outputs", "id": cell.id, "outputs": shown, "execution_count": count}
        await page.request("edit", changes=[change])
    except PageError:
        shown_in_cell = False
    if page.replayed and run.outputs and ctx.tool_call_id:
        # No cell to draw them in: they go under the call's card, as run_python's do.
        ctx.deps.displays[ctx.tool_call_id] = list(run.outputs)
    _note_replayed(ctx, page)
    note = "" if shown_in_cell else "\n(The page did not take the outputs into the cell.)"
    return run.for_model(ctx.model, ctx.deps.settings.model_accepts_images, note)


def _cell_outputs(run: PythonRun, count: int) -> list[dict[str, Any]]:
    """A run's outputs as nbformat's: what it printed, its value (rich when it has a rich
    form) with the cell's execution count, what it displayed (a figure, a table), its error."""
    outputs: list[dict[str, Any]] = []
    if run.stdout:
        outputs.append({"output_type": "stream", "name": "stdout", "text": run.stdout})
    rich = [o for o in run.outputs if o.get("result")]
    if run.result is not None and not rich:
        outputs.append(
            {"output_type": "execute_result", "data": {"text/plain": run.result},
             "metadata": {}, "execution_count": count}
        )  # fmt: skip
    for shown in run.outputs:
        output = {
            "output_type": "display_data",
            "data": shown["data"],
            "metadata": shown["metadata"],
        }
        if shown.get("result"):
            output |= {"output_type": "execute_result", "execution_count": count}
        outputs.append(output)
    if run.error:
        outputs.append(
            {"output_type": "error", "ename": run.ename or "Error", "evalue": run.evalue or "",
             "traceback": run.error.splitlines()}
        )  # fmt: skip
    return outputs


def _python_code(source: str) -> str:
    """The Python of a `%%python` cell (or a `%python` line) without the magic."""
    first, _, rest = source.lstrip().partition("\n")
    if first.startswith("%%python"):
        return rest
    return f"{first.removeprefix('%python').strip()}\n{rest}"


def _redacted(output: dict[str, Any], redact: Any) -> dict[str, Any]:
    """An output with its texts passed through the redactor, for the page."""
    out: dict[str, Any] = {}
    for key, value in output.items():
        if isinstance(value, str):
            out[key] = redact(value)
        elif isinstance(value, list):
            out[key] = [redact(v) if isinstance(v, str) else v for v in value]  # pyright: ignore[reportUnknownVariableType]
        elif isinstance(value, dict):
            out[key] = _redacted(value, redact)  # pyright: ignore[reportUnknownArgumentType]
        else:
            out[key] = value
    return out


async def _only_with_page(
    ctx: RunContext[CoDeps], tool_def: ToolDefinition
) -> ToolDefinition | None:
    """Offer the editing tools only while a page shows the live notebook (or a replay's
    recorded page stands in for one)."""
    return tool_def if page_offered(ctx) else None


def build(settings: Settings) -> ToolsetBuild:
    """The notebook toolset: reading runs without asking, editing and running ask."""
    from pydantic_ai import FunctionToolset, Tool

    editing: list[Tool[CoDeps]] = [
        Tool(insert_cells, prepare=_only_with_page),
        Tool(edit_cell, prepare=_only_with_page),
        Tool(delete_cells, prepare=_only_with_page),
        Tool(move_cell, prepare=_only_with_page),
        Tool(run_cell, prepare=_only_with_page),
    ]
    toolset: FunctionToolset[CoDeps] = FunctionToolset([read_notebook, *editing])
    approval = {"read_notebook": False} | {tool.name: True for tool in editing}
    return ToolsetBuild("notebook", toolset, approval=approval)
