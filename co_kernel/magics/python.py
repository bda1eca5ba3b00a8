"""Run Python in the kernel's own namespace: `%python <expression>` or a `%%python` cell.

`%python df.shape` evaluates one line and shows its value; a cell whose first line is
`%%python` runs the rest as Python, with rich outputs (tables, plots), tracebacks, `_` and
`Out`, as a Python cell would. The assistant sees the same namespace: `@name` in a prompt
describes a variable, and its `run_python` tool runs code there (after your approval).
"""

from __future__ import annotations

from . import MagicContext, MagicError

USAGE = "%python <expression> | %%python"


async def run(ctx: MagicContext, args: str) -> str:
    # The dispatcher runs %python and %%python cells itself (they are code, not a magic's
    # text); this module holds their help, completion and inspection.
    raise MagicError("Usage: %python <expression>, or %%python on a cell's first line.")
