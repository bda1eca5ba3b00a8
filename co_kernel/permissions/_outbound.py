"""The outbound gate: a request leaves only to where the person chose, or after they see it.

Co reads private text (files, notes, mail, Drive, Calendar, Slack, memory, notebook
outputs) and untrusted text (pages, tool results) in the same turn; one injected
instruction could make the model put the first into a URL. So:

- ``web_fetch`` runs without asking only for a URL the person wrote in this conversation,
  a link a search result or a fetched page gave this turn, or a host of the person's own
  allowlist (``web_allowed_domains`` of the user's or the managed settings, or an allow
  rule ``web_fetch(host)`` that is not a project file's); anything else asks.
- ``web_search`` asks when its query repeats private text (the query goes to the provider).
- an MCP tool that says it reaches the open world (``openWorldHint``) asks unless a
  person's allow rule covers it; one that is not marked read-only asks when its arguments
  repeat private text.
- ``outbound_always_ask`` (a deployer's managed setting, or the person's) makes all of
  these ask, a URL the person gave too.

The card shows the URL decoded with every part that repeats private text marked
(``tools._outbound.describe_request``). A call that repeats private text, or that
``outbound_always_ask`` sends to the card, is a floor: yolo and allow rules do not
approve it (``auto_decision``), and a headless run, where nobody sees the card, denies it
(``turn/_approval_batch.py``). After each call the gate keeps the text of private tool
results for the matcher. Subagents run with the same gate and share the ledger.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired

from ..config import PROJECT
from ..inert import inert_code
from ..tools import describe_request, outbound_ledger, result_text
from ._approval import OUTBOUND
from ._rules import rule_for

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import ValidatedToolArgs
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import ToolDefinition

    from ..session_state import CoDeps

__all__ = ["OutboundGate"]

_WEB_FETCH, _WEB_SEARCH = "web_fetch", "web_search"
_NOT_PRIVATE = frozenset(
    {
        _WEB_FETCH,
        _WEB_SEARCH,
        "load_skill",
        "read_skill_resource",
        "read_todos",
        "write_todos",
        "delegate_task",
        "list_mcp_resources",
    }
)
"""Tools whose results are not private text: the web's, Co's own definitions and lists,
and a subagent's summary (its own tool results were noted as it ran)."""


def _hints(tool_def: ToolDefinition) -> dict[str, Any] | None:
    """An MCP tool's annotations (``{}`` when it gave none); None for any other tool."""
    meta = tool_def.metadata
    if not isinstance(meta, dict) or "annotations" not in meta:
        return None
    hints = meta.get("annotations")
    return cast(dict[str, Any], hints) if isinstance(hints, dict) else {}


def _person_allows(tool: str, args: dict[str, Any], deps: CoDeps) -> bool:
    """Whether an allow rule of the person (session, user or managed settings, not a
    project file, even an accepted one) decides this call."""
    rule = rule_for(tool, args, deps)
    return rule is not None and rule.kind == "allow" and rule.source != PROJECT


def _ask(detail: str, *, floor: bool) -> ApprovalRequired:
    return ApprovalRequired(metadata={"detail": detail, OUTBOUND: {"floor": floor}})


def _fetch_decision(url: str, args: dict[str, Any], deps: CoDeps) -> ApprovalRequired | None:
    ledger = outbound_ledger(deps)
    forced = deps.settings.outbound_always_ask
    if not forced and (
        ledger.chosen(url, deps.turn_index)
        or ledger.allowlisted(url)
        or _person_allows(_WEB_FETCH, args, deps)
    ):
        return None
    why = (
        "Every request that leaves this computer asks (`outbound_always_ask`)."
        if forced
        else "This URL is not one you gave, nor a link of a page or search this turn. "
        "Co would send a request to it:"
    )
    detail, repeats = describe_request(ledger, url, url=True, intro=why)
    return _ask(detail, floor=forced or repeats)


def _search_decision(query: str, deps: CoDeps) -> ApprovalRequired | None:
    ledger = outbound_ledger(deps)
    host = urlsplit(deps.settings.brave_search_base_url).hostname or "the search provider"
    intro = f"This search query goes to Brave Search ({host}):"
    detail, repeats = describe_request(ledger, query, url=False, intro=intro)
    forced = deps.settings.outbound_always_ask
    if not (forced or repeats):
        return None
    return _ask(detail, floor=True)


def _mcp_decision(
    name: str, hints: dict[str, Any], args: dict[str, Any], deps: CoDeps
) -> ApprovalRequired | None:
    open_world = hints.get("openWorldHint") is True
    local = hints.get("openWorldHint") is False or hints.get("readOnlyHint") is True
    if not open_world and local:
        return None
    ledger = outbound_ledger(deps)
    text = json.dumps(args, ensure_ascii=False, sort_keys=True)
    reach = "reaches the open world" if open_world else "may change or send something"
    intro = f"The MCP tool {inert_code(name)} {reach}; its arguments:"
    detail, repeats = describe_request(ledger, text, url=False, intro=intro)
    forced = deps.settings.outbound_always_ask
    if forced or repeats:
        return _ask(detail, floor=True)
    if open_world and not _person_allows(name, args, deps):
        return _ask(detail, floor=False)
    return None


@dataclass
class OutboundGate(AbstractCapability[Any]):
    """Sends outbound calls the person did not choose to the card, and keeps the text of
    private tool results for matching."""

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
        deps: CoDeps = ctx.deps
        given = dict(args)
        name = tool_def.name
        asking: ApprovalRequired | None = None
        hints = _hints(tool_def)
        if hints is not None:
            asking = _mcp_decision(name, hints, given, deps)
        elif name == _WEB_FETCH and isinstance(url := given.get("url"), str):
            asking = _fetch_decision(url, given, deps)
        elif name == _WEB_SEARCH and isinstance(query := given.get("query"), str):
            asking = _search_decision(query, deps)
        if asking is not None:
            raise asking
        return args

    async def after_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        result: Any,
    ) -> Any:
        name = tool_def.name
        hints = _hints(tool_def)
        outside = hints is not None and hints.get("openWorldHint") is True
        ledger = outbound_ledger(ctx.deps)
        if name not in _NOT_PRIVATE and not outside:
            ledger.note_private(name, result_text(result))
        elif name == _WEB_FETCH and ctx.tool_call_approved:
            # Approved once, the URL is chosen: its later pages do not ask again.
            url = dict(args).get("url")
            if isinstance(url, str):
                ledger.note_chosen(url)
        return result
