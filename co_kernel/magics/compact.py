"""Replace older turns with a summary written by the model; the last turns stay verbatim.

`%compact` summarises everything but the last `compact_keep_turns` turns; `%compact the
data cleaning` asks the summary to give most room to that. The summary is written by
`summarization_model` (default: the session's model). Co also compacts by itself when the
prompt passes `auto_compact_ratio` of `context_window_tokens`.
"""

from __future__ import annotations

from . import MagicContext, MagicError

USAGE = "%compact [focus]"


async def run(ctx: MagicContext, args: str) -> str:
    from ..exceptions import CompactError, ConfigError

    session = ctx.session
    try:
        report = await session.compact(args or None)
    except (CompactError, ConfigError) as exc:
        reason = str(exc).rstrip(".")
        raise MagicError(f"Could not compact: {reason}. The conversation is unchanged.") from None
    quoted = "\n".join(f"> {line}" if line else ">" for line in report.summary.splitlines())
    return (
        f"Compacted {report.folded_turns} turn(s) into a summary and kept the last "
        f"{report.kept_turns} as they were: ~{report.tokens_before:,} → "
        f"~{report.tokens_after:,} tokens sent to the model.\n\n"
        f"<details><summary>Summary</summary>\n\n{quoted}\n\n</details>"
    )
