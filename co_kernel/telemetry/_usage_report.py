"""``co-kernel usage``: spending per person, day and model, read from the spend store.

A deployer runs it against the shared store a hub's managed settings name
(``spend_store``); a person runs it against their own. The same figures go out as
OpenTelemetry metrics (``_metrics.py``) when an OTLP endpoint is set.
"""

from __future__ import annotations

import datetime
import sqlite3
from pathlib import Path

from ..exceptions import DatabaseTooNew
from ._spend import SpendRow, SpendStore, spend_store_path

__all__ = ["print_usage", "usage_table"]


def _cost(value: float | None, unpriced: int) -> str:
    from decimal import Decimal

    from ._cost import format_cost

    if value is None:
        return format_cost(None)
    text = format_cost(Decimal(repr(value)))
    return f"{text} (+{unpriced} unpriced)" if unpriced else text


def usage_table(rows: list[SpendRow]) -> str:
    """The rows as an aligned text table, with a total per person."""
    header = ("day", "person", "model", "requests", "input tokens", "output tokens", "cost")
    lines: list[tuple[str, ...]] = [header]
    totals: dict[str, list[float]] = {}
    for row in rows:
        lines.append(
            (
                row.day,
                row.person,
                row.model,
                f"{row.requests:,}",
                f"{row.input_tokens:,}",
                f"{row.output_tokens:,}",
                _cost(row.cost, row.unpriced if row.cost is not None else 0),
            )
        )
        total = totals.setdefault(row.person, [0, 0, 0, 0.0, 0, 0])
        total[0] += row.requests
        total[1] += row.input_tokens
        total[2] += row.output_tokens
        total[3] += row.cost or 0.0
        total[4] += row.unpriced
        total[5] += 1 if row.cost is not None else 0
    for person, (requests, tokens_in, tokens_out, cost, unpriced, priced) in sorted(totals.items()):
        lines.append(
            (
                "total",
                person,
                "",
                f"{int(requests):,}",
                f"{int(tokens_in):,}",
                f"{int(tokens_out):,}",
                _cost(cost if priced else None, int(unpriced) if priced else 0),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    numeric = {3, 4, 5}
    out = []
    for line in lines:
        cells = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(line)
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def print_usage(
    store: Path | None, *, since: str | None, days: int | None, person: str | None
) -> int:
    """Print the table; 1 when there is no store or it cannot be read."""
    if store is None:
        from ..config import load_settings

        store = spend_store_path(load_settings().settings)
    if days is not None:
        first = datetime.date.today() - datetime.timedelta(days=max(days, 1) - 1)
        since = max(since or "", first.isoformat())
    if not store.exists():
        print(f"No spending recorded yet: {store} does not exist (it appears after a turn).")
        return 1
    try:
        spend = SpendStore(store, create=False)
    except (OSError, sqlite3.Error, DatabaseTooNew) as exc:
        print(f"Cannot read {store}: {exc}")
        return 1
    try:
        rows = list(spend.rows(since=since, person=person))
    finally:
        spend.close()
    print(f"Spending recorded in {store} (US dollars; tokens per model)")
    if not rows:
        print("No model requests" + (f" since {since}" if since else "") + ".")
        return 0
    print(usage_table(rows))
    return 0
