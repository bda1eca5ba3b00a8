"""The one-line footer that ends a turn: model, tokens in/out, cost, requests, duration.

One formatter for every frontend. Whether it shows is the ``show_footer`` setting:
``always``, ``never``, or ``auto`` (the default) = in notebooks and consoles but not in
headless runs, whose outputs nbval compares strictly and whose duration varies.
"""

from __future__ import annotations

from ..turn import TurnSummary

__all__ = ["footer_bundle", "footer_enabled", "format_footer"]


def footer_enabled(mode: str, kind: str) -> bool:
    """Whether a frontend of this kind (notebook, console, headless) shows the footer."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    return kind in ("notebook", "console")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def format_footer(summary: TurnSummary) -> str:
    """``openai:gpt-4o · 1,204 in / 56 out tokens · $0.0086 · 2 requests · 3.4 s``
    (``price unknown`` for a model without a price)."""
    parts = [
        summary.model,
        f"{summary.input_tokens:,} in / {summary.output_tokens:,} out tokens",
    ]
    if summary.cost is not None:
        parts.append(str(summary.cost))
    parts += [
        _plural(summary.requests, "request"),
        f"{summary.duration:.1f} s",
    ]
    if summary.interrupted:
        parts.append("interrupted")
    elif summary.error:
        parts.append("stopped")
    return " · ".join(parts)


def footer_bundle(line: str) -> dict[str, str]:
    """The footer as display data: small grey HTML, plain text for everything else."""
    import html

    style = "color:var(--jp-ui-font-color2,#777);font-size:0.85em;margin-top:0.3em"
    return {
        "text/html": f'<div class="co-turn-footer" style="{style}">{html.escape(line)}</div>',
        "text/plain": line,
    }
