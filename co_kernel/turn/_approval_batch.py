"""The approval batch: deferred tool calls decided by yolo, a rule, a replay, or the person.

Calls are decided in order, so "Approve all" on one call also covers the rest of the
batch (``auto_decision`` sees ``deps.auto_confirm``); each decision is written on the
call's card and kept for its result and audit row.

A call that touches several cells (``ToolCallView.parts``) may be approved in part: the
cells the person accepted reach the tool as the call's metadata (``{"accepted": [...]}``,
``RunContext.tool_call_metadata``) and its label names them (``partial_label``), which is
also how a replay applies the same cells. Yolo, rules and "Approve all" take whole calls.

A request the outbound gate sent here (``permissions._outbound``) that repeats private
text is a floor: yolo and allow rules do not approve it, and a headless run denies it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from ..inert import inert_code, inert_text
from ..permissions import (
    ALL_PARTS_REJECTED,
    DENIED,
    INTERRUPTED,
    accepted_parts,
    auto_decision,
    decision_label,
    denial_message,
    is_refusal,
    normalise_args,
    outbound_floor,
    partial_label,
    record_decision,
    replayed_decision,
)
from ._frontend import ApprovalRequest, ToolCallView

if TYPE_CHECKING:
    from pydantic_ai import DeferredToolRequests, DeferredToolResults

    from ._events import TurnEvents

__all__ = ["decide_batch"]

WAITING = "waiting"
"""The audit decision of a call asking for approval until it is decided."""

_UNSEEN_OUTBOUND = (
    "This request was not sent: it repeats text read from the user's private data, or the "
    "settings make every outbound request ask (outbound_always_ask), and a headless run "
    "cannot show it to anyone. Do not retry it; say what you wanted to send and where."
)


async def decide_batch(requests: DeferredToolRequests, events: TurnEvents) -> DeferredToolResults:
    """Answer one batch of deferred calls, showing each on ``events``' frontend."""
    from pydantic_ai import DeferredToolResults, ToolDenied

    deps, frontend = events.deps, events.frontend
    results = DeferredToolResults()
    timeout = deps.settings.approval_timeout
    for call in requests.approvals:
        call_id = call.tool_call_id
        events.call_args[call_id] = call.args
        meta = requests.metadata.get(call_id, {})
        view = ToolCallView(call_id, call.tool_name, call.args, needs_approval=True)
        view.detail = meta.get("detail")
        view.parts = _parts(meta)
        events.shown_calls.add(call_id)
        accepted: list[int] | None = None
        floor = outbound_floor(meta)
        headless = getattr(frontend, "kind", "") == "headless"
        label = auto_decision(call.tool_name, normalise_args(call.args), deps, outbound=floor)
        if label is None:
            label = replayed_decision(call_id, call.tool_name, call.args, deps)
            accepted = accepted_parts(label) if label is not None else None
        if label is None and floor and headless:
            # Nobody sees a headless run's card: a request that repeats private text (or
            # that `outbound_always_ask` holds) is not sent on a policy's word.
            label = DENIED
            view.decision = label
            frontend.on_tool_call(view)
            events.decisions[call_id] = label
            events.audit_progress(call_id, call.tool_name, "decide", label)
            results.approvals[call_id] = ToolDenied(_UNSEEN_OUTBOUND)
            continue
        if label is not None:
            view.decision = label
            frontend.on_tool_call(view)
        else:
            events.audit_progress(call_id, call.tool_name, "ask", WAITING)
            label, accepted = await _ask(view, timeout, events)
            record_decision(call_id, label, deps, by_policy=headless)
        events.decisions[call_id] = label
        events.audit_progress(call_id, call.tool_name, "decide", label)
        if is_refusal(label):
            # A headless run's policy answered: the model must not think the user did.
            policy = deps.settings.approval_mode if headless else None
            message = denial_message(label, timeout, policy=policy)
            results.approvals[call_id] = ToolDenied(
                ALL_PARTS_REJECTED if accepted == [] else message
            )
        else:
            results.approvals[call_id] = True
            if accepted is not None:
                results.metadata[call_id] = {"accepted": accepted}
    for call in requests.calls:
        # External calls are not used by Co's tools; never leave them dangling.
        results.calls[call.tool_call_id] = "This tool cannot run here."
    return results


def _parts(meta: object) -> list[str] | None:
    """The per-cell diffs a tool put in its approval metadata, when there are several."""
    parts = cast(dict[str, Any], meta).get("parts") if isinstance(meta, dict) else None
    if not isinstance(parts, list) or len(cast(list[Any], parts)) < 2:
        return None
    return [str(p) for p in cast(list[Any], parts)]


async def _ask(
    view: ToolCallView, timeout: float | None, events: TurnEvents
) -> tuple[str, list[int] | None]:
    """The person's decision as its label, and the parts they accepted (None: all)."""
    from ..config import PermissionRule
    from ..permissions import narrowest_rule

    deps, frontend = events.deps, events.frontend
    rule = narrowest_rule(view.name, normalise_args(view.args), deps.workspace)
    request = ApprovalRequest(view, timeout=timeout, rule=rule)
    try:
        choice = await frontend.prompt_approval(request)
    except asyncio.CancelledError:
        events.decisions[view.call_id] = INTERRUPTED
        raise
    except Exception as exc:
        # A frontend that cannot ask (widgets or stdin broken) must not run the call.
        frontend.on_notice(
            f"Could not ask for approval of {inert_code(view.name)} "
            f"({inert_text(f'{type(exc).__name__}: {exc}')}); "
            "the call was denied.",
            "error",
        )
        choice = "deny"
    if choice == "approve_all" and not deps.settings.allow_yolo:
        choice = "approve"  # `allow_yolo` off (managed settings): this call only
    if choice == "approve_all":
        # Session yolo: the rest of this batch and of the session runs without asking.
        deps.auto_confirm = True
    elif choice == "always_allow":
        deps.session_rules.append(PermissionRule(kind="allow", rule=rule, source="session"))
    accepted = request.accepted if view.parts else None
    if accepted is not None and choice != "deny":
        return partial_label(decision_label(choice), accepted, len(view.parts or [])), accepted
    return decision_label(choice), accepted
