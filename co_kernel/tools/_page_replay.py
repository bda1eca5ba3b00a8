"""The notebook's page as one tool call sees it, recorded and replayed.

While the session records (``%record``, setting ``record_path``), what a notebook tool
asks the page and what the page answers are written into the recording with the call
(``page`` in ``co_kernel.replay._script``). An edit is kept as what a person would see
of it: each change's cell by its position in the document the call read (cell ids
differ from run to run), its type and source, an output's kind (not its bytes).

A replay builds each edit anew and compares it with the recorded one; a difference ends
the turn with ``PageReplayMismatch``, which names it, so an nbval run of a recorded
notebook fails when an edit differs. With no page connected (nbval, nbclient, papermill)
the recorded answers stand in for the page: the editing tools are offered, nothing is
applied anywhere, and the turn goes as recorded; the tool's card says "replayed page".
With a page connected, the page answers and applies, after the same comparison.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..exceptions import PageError, PageReplayMismatch
from ..session_state import ExtrasKey
from ._json import as_list, as_object, is_list

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_ai import RunContext

    from ..notebook import NotebookPage
    from ..replay import Recorder
    from ..session_state import CoDeps

__all__ = ["REPLAYED_PAGE", "CallPage", "page_offered", "replayed_ids"]

REPLAYED_PAGE = (
    "replayed page: no page is connected, so the page's answers recorded with this call "
    "stand in for it (nothing is applied to a notebook)"
)

_NO_PAGE = "no page with Co's JupyterLab extension shows this notebook"

_KEEP_READS = 50
"""Calls whose last read is remembered (a call reads, waits for approval, then edits)."""
_REPLAYED_IDS = ExtrasKey[dict[str, str]]("replayed_cell_ids")
_READS = ExtrasKey[dict[str, list[Any]]]("page_reads")
"""The cells each call last read from the page, by call id."""


def replayed_ids(ctx: RunContext[CoDeps]) -> dict[str, str]:
    """The session's recorded cell id -> the id the live page gave that cell, for cells a
    replay inserted into a page (``CallPage.request``)."""
    return ctx.deps.extras.get_or_create(_REPLAYED_IDS, dict[str, str])


def page_offered(ctx: RunContext[CoDeps]) -> bool:
    """Whether a page shows the live notebook, or a replay recorded with one stands in."""
    notebook = ctx.deps.notebook
    if notebook is not None and notebook.page.connected():
        return True
    recorder = ctx.deps.recorder
    return notebook is not None and recorder is not None and recorder.replays_page


class CallPage:
    """The page one tool call talks to: the live page, or a replay's recorded answers."""

    def __init__(self, ctx: RunContext[CoDeps]) -> None:
        notebook = ctx.deps.notebook
        self._live: NotebookPage | None = notebook.page if notebook is not None else None
        self._recorder: Recorder | None = ctx.deps.recorder
        self._call = ctx.tool_call_id or ""
        self._tool = ctx.tool_name or "the notebook tool"
        self._reads = ctx.deps.extras.get_or_create(_READS, dict[str, list[Any]])
        self.replayed = False
        """True once the recorded answers stood in for the page."""
        self._offered = page_offered(ctx)
        self._ids: dict[str, str] = replayed_ids(ctx)

    def connected(self) -> bool:
        return self._offered

    def absent(self) -> str | None:
        """Why no page answers for the kernel's notebook; None when one does, or when a
        replay's recorded page stands in for one."""
        if self._offered:
            return None
        return self._live.absent() if self._live is not None else _NO_PAGE

    async def request(self, op: str, timeout: float = 15, **args: Any) -> dict[str, Any]:
        """The page's answer (or the recorded one), after comparing an edit with the
        recorded edit; recorded when the session records."""
        recorder = self._recorder
        # A call the script does not hold (one a record-missing replay's fallback model
        # made) has nothing to compare with.
        replaying = recorder is not None and recorder.page_recorded(self._call)
        recorded = recorder.replayed_page(self._call, op) if recorder and replaying else None
        shown = args
        if op == "edit":
            shown = {"proposed": self._proposed(args.get("changes", []))}
            if replaying:
                self._compare(recorded, shown["proposed"])
        if self._live is not None and self._live.connected():
            try:
                reply = await self._live.request(op, timeout, **self._to_page(args))
            except PageError as exc:
                self._record(op, shown, {"error": str(exc)})
                raise
            if recorded is not None:
                reply = self._from_page(op, reply, recorded)
        elif recorded is not None:
            reply = dict(recorded.get("reply") or {})
            self.replayed = True
            if "error" in reply:
                raise PageError(str(reply["error"]))
        else:
            why = (self._live.absent() if self._live is not None else None) or _NO_PAGE
            raise PageError(
                why
                + (", and the replay script recorded no page answer here" if self._offered else "")
            )
        if op == "read":
            cells = reply.get("cells")
            self._reads[self._call] = cells if isinstance(cells, list) else []
            for stale in list(self._reads)[:-_KEEP_READS]:
                del self._reads[stale]
        self._record(op, shown, reply)
        return reply

    def check_edit(
        self,
        changes: list[dict[str, Any]],
        pick: Callable[[list[int]], list[dict[str, Any]]] | None = None,
    ) -> None:
        """Before the person is asked: refuse, in a replay, an edit that is not the recorded one.

        A call recorded approved in part recorded the cells it applied: ``pick`` makes the
        same part of this proposal (the replay applies the same cells).
        """
        recorder = self._recorder
        if recorder is not None and recorder.page_recorded(self._call):
            cells = recorder.replayed_cells(self._call)
            if cells is not None and pick is not None and not all(cells):
                changes = pick([i for i, accepted in enumerate(cells) if accepted])
            recorded = recorder.replayed_page(self._call, "edit", peek=True)
            self._compare(recorded, self._proposed(changes))

    def _to_page(self, args: dict[str, Any]) -> dict[str, Any]:
        """A request in the page's ids (see ``_from_page``)."""
        if not self._ids or not isinstance(args.get("changes"), list):
            return args
        changes = [
            {**c, "id": self._ids.get(c["id"], c["id"])} if isinstance(c.get("id"), str) else c
            for c in map(as_object, as_list(args["changes"]))
            if c is not None
        ]
        return {**args, "changes": changes}

    def _from_page(
        self, op: str, reply: dict[str, Any], recorded: dict[str, Any]
    ) -> dict[str, Any]:
        """A live page's reply, in a replay, with the recorded ids.

        The page makes up its own ids for the cells it inserts; the replayed model names
        them by the ids of the recording, and its tool results are checked against the
        recorded ones. So while a replay drives a page, the tools see the recorded ids
        (``_ids``: recorded -> the page's) and requests go out in the page's.
        """
        if op == "edit":
            was = as_list((as_object(recorded.get("reply")) or {}).get("ids"))
            now = as_list(reply.get("ids"))
            self._ids.update(zip(map(str, was), map(str, now), strict=False))
        back = {live: old for old, live in self._ids.items()}
        if not back:
            return reply
        if op == "edit" and isinstance(reply.get("ids"), list):
            return {**reply, "ids": [back.get(i, i) for i in as_list(reply["ids"])]}
        if op == "read" and isinstance(reply.get("cells"), list):
            cells = [
                {**cell, "id": back.get(cell["id"], cell["id"])}
                if (cell := as_object(c)) is not None and isinstance(cell.get("id"), str)
                else c
                for c in as_list(reply["cells"])
            ]
            return {**reply, "cells": cells}
        return reply

    def _proposed(self, changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [_what_matters(c, self._reads.get(self._call, [])) for c in changes]

    def _record(self, op: str, shown: dict[str, Any], reply: dict[str, Any]) -> None:
        if self._recorder is not None and self._recorder.path is not None and self._call:
            answer = {k: v for k, v in reply.items() if k != "reply"}  # the request's id
            self._recorder.record_page(self._call, {"op": op, **shown, "reply": answer})

    def _compare(self, recorded: dict[str, Any] | None, proposed: list[dict[str, Any]]) -> None:
        """Raise PageReplayMismatch naming the first difference from the recorded edit."""
        script = getattr(getattr(self._recorder, "replaying", None), "path", "the replay script")
        head = f"The replayed `{self._tool}` call ({self._call}) proposes"
        fix = "The notebook or its replay script changed since it was recorded: record it again."
        if recorded is None:
            raise PageReplayMismatch(f"{head} a notebook edit where {script} recorded none. {fix}")
        found = _first_difference(as_list(recorded.get("proposed")), proposed, [])
        if found is not None:
            where, was, now = found
            raise PageReplayMismatch(
                f"{head} another notebook edit than the one recorded in {script}: "
                f"{where}: recorded {_short(was)}, now {_short(now)}. {fix}"
            )


def _what_matters(change: dict[str, Any], cells: list[Any]) -> dict[str, Any]:
    """A change as a person sees it: cells by position, outputs by kind."""
    positions = {c.get("id"): i for i, c in enumerate(map(as_object, cells)) if c is not None}
    out: dict[str, Any] = {}
    for key, value in change.items():
        if key == "id":
            out["cell"] = positions.get(value, value)
        elif key == "cells" and is_list(value):
            out["cells"] = [
                {"cell_type": c.get("cell_type"), "source": c.get("source")}
                for c in map(as_object, value)
                if c is not None
            ]
        elif key == "outputs" and is_list(value):
            outputs = map(as_object, value)
            out["outputs"] = [_output_kind(o) for o in outputs if o is not None]
        elif key != "execution_count":  # the kernel's counter, not the edit
            out[key] = value
    return out


def _output_kind(output: dict[str, Any]) -> str:
    kind = str(output.get("output_type", "output"))
    if kind == "stream":
        return f"{kind} {output.get('name', 'stdout')}"
    if kind == "error":
        return f"{kind} {output.get('ename', '')}"
    data = as_object(output.get("data"))
    return f"{kind} {', '.join(sorted(data))}" if data is not None else kind


def _first_difference(was: Any, now: Any, path: list[str]) -> tuple[str, Any, Any] | None:
    """Where ``now`` first differs from ``was``, in words, with both values there."""
    was_object, now_object = as_object(was), as_object(now)
    if was_object is not None and now_object is not None:
        for key in dict.fromkeys([*was_object, *now_object]):
            at = [*path, str(key)]
            found = _first_difference(was_object.get(key), now_object.get(key), at)
            if found is not None:
                return found
        return None
    if is_list(was) and is_list(now):
        for index in range(max(len(was), len(now))):
            a = was[index] if index < len(was) else None
            b = now[index] if index < len(now) else None
            found = _first_difference(a, b, [*path, _item(path, index, a if b is None else b)])
            if found is not None:
                return found
        return None
    if was == now:
        return None
    if isinstance(was, str) and isinstance(now, str) and "\n" in was + now:
        # A cell's source: the first line that differs says more than two clipped texts.
        before, after = was.split("\n"), now.split("\n")
        line = next(
            (i for i, pair in enumerate(zip(before, after, strict=False)) if pair[0] != pair[1]),
            min(len(before), len(after)),
        )
        at = before[line] if line < len(before) else None
        to = after[line] if line < len(after) else None
        return _where([*path, f"line {line + 1}"]), at, to
    return _where(path), was, now


def _where(path: list[str]) -> str:
    # A list's items name themselves ("new cell 2"): its key would only repeat it.
    named = [part for i, part in enumerate(path) if part not in _LISTS or i == len(path) - 1]
    return ", ".join(named) or "the edit"


def _item(path: list[str], index: int, value: Any) -> str:
    """How a person names the ``index``-th item of a list in a change."""
    if not path:
        op = (as_object(value) or {}).get("op")
        return f"change {index + 1}" + (f" ({op})" if op else "")
    return _LISTS.get(path[-1], "item") + f" {index + 1}"


_LISTS = {"cells": "new cell", "outputs": "output"}
"""The lists of a change, and what one of their items is called."""


def _short(value: Any, limit: int = 300) -> str:
    if value is None:
        return "nothing"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
