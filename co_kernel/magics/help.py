"""Show every magic with its one-line summary, or one magic's full help.

`%help` lists all; `%help model` shows how `%model` works. Anything else in a cell is
sent to the assistant; a cell starting with `!` runs in the sandbox.
"""

from __future__ import annotations

from ..inert import inert_code
from . import MAGICS, MagicContext, find_magic, magic_help

USAGE = "%help [magic]"


async def run(ctx: MagicContext, args: str) -> str:
    if args:
        return magic_help(args.lstrip("%").split()[0])
    rows = ["| magic | what it does |", "|---|---|"]
    for name in sorted(MAGICS):
        module = find_magic(name)
        summary = (module.__doc__ or "").strip().splitlines()[0]
        rows.append(f"| {inert_code(module.USAGE, table=True)} | {summary} |")
    rows.append("")
    rows.append(
        "A plain cell is a prompt to Co; a cell starting with `!` runs a shell command in the sandbox."
    )
    return "\n".join(rows)


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    return [name for name in sorted(MAGICS) if name.startswith(arg_text.strip().lstrip("%"))]
