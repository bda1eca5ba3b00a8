"""Trust the notebook's folder, withdraw that trust, or see it.

`%trust` trusts the folder as its files are now: its `.co/settings.json` (models, MCP
servers, permission rules, keys of its own), `.co/instructions.md`, knowledge, agents and
skills apply from this cell on. Settings that carry your authority (where your keys and
prompts go, what runs unasked, how far the tools reach) never come from a project file,
trusted or not. Any later change to those files makes the folder untrusted again until you
look and trust it again. `%trust revoke` withdraws it; `%trust show` says what is trusted
and what the folder would bring. The record is kept in your data folder, never in the
project. For runs nobody watches, name the folder in the setting `trusted_folders`.

Trust also lets your Python import the folder's own modules: `import mymod` in a
`%%python` cell finds the `mymod.py` beside the notebook only in a trusted folder (also one
without Co files). Until then the import fails and says to trust the folder, so a module
someone put there never runs unasked; Co itself never imports anything from the folder.
"""

from __future__ import annotations

from ..inert import inert_code
from . import MagicContext, MagicError

USAGE = "%trust [show|revoke]"

_WORDS = ("show", "revoke")
_LISTED = 60
"""Hashed files named one by one (an MCP server's code may be hundreds)."""


def _show(ctx: MagicContext) -> str:
    from ..config import folder_trust, trust_record_path, trust_records, trusted_for_code

    session = ctx.session
    settings = session.settings
    trust = folder_trust(
        session.workspace,
        trusted_folders=settings.trusted_folders,
        policy=settings.trust_policy,
    )
    folder = inert_code(trust.folder)
    state = {
        "trusted": f"**trusted** ({trust.source})",
        "nothing": "brings no Co settings or files",
        "untrusted": "**not trusted**: its settings and files are off (`%trust` to trust it)",
        "changed": "**not trusted any more**: files changed since you trusted it",
        "refused": "**not trusted**: your administrator's `trust_policy` is `never`",
    }[trust.status]
    lines = [f"This folder {folder} {state}."]
    if trust.status == "nothing":
        code = trusted_for_code(
            session.workspace,
            trusted_folders=settings.trusted_folders,
            policy=settings.trust_policy,
        )
        lines.append(
            "You trust it: `%%python` imports its modules."
            if code
            else "`%%python` imports its modules only once you trust it (`%trust`)."
        )
    if trust.changed:
        lines += [
            "",
            "Changed since you trusted it:",
            *(f"- {inert_code(c)}" for c in trust.changed),
        ]
    if trust.files:
        lines += ["", f"Files that decide its trust (hashed): {len(trust.files)}"]
        lines += [f"- {inert_code(name)}" for name in list(trust.files)[:_LISTED]]
        if len(trust.files) > _LISTED:
            lines.append(f"- … and {len(trust.files) - _LISTED} more")
    held = session.loaded.held
    if held and not trust.trusted:
        lines += ["", "Once trusted it would bring:", *(f"- {line}" for line in held)]
    others = sorted(trust_records())
    if others:
        lines += ["", f"Folders you trust ({inert_code(trust_record_path())}):"]
        lines += [f"- {inert_code(name)}" for name in others]
    return "\n".join(lines)


async def run(ctx: MagicContext, args: str) -> str:
    from ..config import folder_trust, forget_folder, trust_folder

    word = args.strip().lower()
    if word == "show":
        return _show(ctx)
    session = ctx.session
    if word == "revoke":
        if forget_folder(session.workspace):
            return (
                f"You no longer trust {inert_code(session.workspace)}: its settings and files are off "
                "from this cell on."
            )
        return f"{inert_code(session.workspace)} was not trusted by a decision of yours; nothing changed."
    if word:
        raise MagicError(f"%trust takes show or revoke, not '{args.strip()}'.")
    settings = session.settings
    if settings.trust_policy == "never":
        raise MagicError(
            "Your administrator's `trust_policy` is `never`: project folders are not trusted."
        )
    before = folder_trust(session.workspace, trusted_folders=settings.trusted_folders)
    trust_folder(session.workspace)
    if before.status == "nothing":
        return (
            f"✅ You trust {inert_code(before.folder)}: it brings no Co settings or files, and "
            "`%%python` imports its modules from this cell on. `%trust revoke` withdraws it."
        )
    return (
        f"✅ You trust {inert_code(before.folder)} as its files are now: its settings and files apply "
        "from this cell on. A change to them asks again; `%trust revoke` withdraws it."
    )


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    return [w for w in _WORDS if w.startswith(arg_text.strip().lower())]
