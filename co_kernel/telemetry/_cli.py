"""The telemetry subcommands of ``co-kernel``: tail, logs, traces, usage."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._spans import SPAN_KINDS

__all__ = ["add_telemetry_commands"]


def _db(args: argparse.Namespace) -> Path:
    if args.db:
        return Path(args.db).expanduser()
    from . import telemetry_db_path

    return telemetry_db_path()


def _cmd_tail(args: argparse.Namespace) -> int:
    from ._tail import tail

    return tail(
        _db(args),
        session_id=args.session,
        kind=args.kind,
        follow=not args.once,
        last=args.last,
        interval=args.interval,
    )


def _cmd_logs(args: argparse.Namespace) -> int:
    from ._logs import serve_logs

    return serve_logs(_db(args), port=args.port, open_browser=args.open)


def _cmd_traces(args: argparse.Namespace) -> int:
    from ._traces import write_traces

    db = _db(args)
    output = Path(args.output).expanduser()
    if not db.exists():
        print(f"No telemetry yet: {db} does not exist (it appears after the first turn).")
        return 1
    count = write_traces(db, output, session_id=args.session, limit=args.limit)
    which = f" of session {args.session}" if args.session else ""
    print(f"Wrote {count} turn(s){which} to {output}")
    return 0


def _cmd_usage(args: argparse.Namespace) -> int:
    from ._usage_report import print_usage

    return print_usage(
        Path(args.store).expanduser() if args.store else None,
        since=args.since,
        days=args.days,
        person=args.person,
    )


def add_telemetry_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``tail``, ``logs``, ``traces`` and ``usage`` on the ``co-kernel`` parser."""
    db_help = "the telemetry database (default: <data dir>/telemetry.db)"

    p_tail = sub.add_parser("tail", help="show spans live in the terminal")
    p_tail.add_argument("--session", help="only this session (a prefix of its id is enough)")
    p_tail.add_argument("--kind", choices=SPAN_KINDS, help="only spans of this kind")
    mode = p_tail.add_mutually_exclusive_group()
    mode.add_argument("--follow", action="store_true", help="keep printing new spans (the default)")
    mode.add_argument("--once", action="store_true", help="print the latest spans and exit")
    p_tail.add_argument("--last", type=int, default=20, help="spans shown at the start")
    p_tail.add_argument("--interval", type=float, default=0.5, help="seconds between polls")
    p_tail.add_argument("--db", help=db_help)
    p_tail.set_defaults(func=_cmd_tail)

    p_logs = sub.add_parser("logs", help="browse spans and the audit log with Datasette")
    p_logs.add_argument("--port", type=int, default=8001, help="port on 127.0.0.1")
    p_logs.add_argument("--open", action="store_true", help="open it in the browser")
    p_logs.add_argument("--db", help=db_help)
    p_logs.set_defaults(func=_cmd_logs)

    p_traces = sub.add_parser("traces", help="write an HTML page with the span tree per turn")
    p_traces.add_argument("--session", help="only this session (a prefix of its id is enough)")
    p_traces.add_argument("--output", "-o", default="co-traces.html", help="the HTML file")
    p_traces.add_argument("--limit", type=int, default=50, help="the last N turns")
    p_traces.add_argument("--db", help=db_help)
    p_traces.set_defaults(func=_cmd_traces)

    p_usage = sub.add_parser(
        "usage", help="print spending per person, day and model from the spend store"
    )
    p_usage.add_argument(
        "--store",
        help="the spend store (default: the `spend_store` setting, else <data dir>/spend.db)",
    )
    p_usage.add_argument("--since", help="from this day on (YYYY-MM-DD)")
    p_usage.add_argument("--days", type=int, help="the last N days, today included")
    p_usage.add_argument("--person", help="only this person")
    p_usage.set_defaults(func=_cmd_usage)
