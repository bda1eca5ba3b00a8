"""Serve a script as an OpenAI-compatible model until Ctrl+C (SIGINT) or SIGTERM.

    python -m co_kernel.replay SCRIPT --port N [--host 127.0.0.1] [--tokens-per-second R]

Prints the base URL on the first line of stdout. On exit, prints the script mismatches it
recorded to stderr and exits with status 1 if there were any.

Both signals stop it the same way, also when it was started in the background by a
script (``... &``), where the shell has it ignore SIGINT: the server is for stopping
once a test is done, and a SIGTERM that ended it at once would lose the report.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence
from types import FrameType

from ._server import ScriptedModelServer

WAKE_EVERY = 0.2
"""Seconds between the main thread's looks at a pending signal."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m co_kernel.replay",
        description="Serve a scripted model on the OpenAI Chat Completions API.",
    )
    parser.add_argument(
        "script", help="a .json list of steps or a .jsonl file with one step per line"
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port to listen on (default: a free one)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument(
        "--tokens-per-second",
        type=float,
        default=None,
        metavar="R",
        help="stream at R tokens per second",
    )
    args = parser.parse_args(argv)
    try:
        server = ScriptedModelServer(
            args.script, host=args.host, port=args.port, tokens_per_second=args.tokens_per_second
        )
        server.start()
    except (ValueError, OSError) as e:
        parser.exit(2, f"error: {e}\n")
    try:
        # Inside the try: a signal may come as soon as the URL is out, while print is
        # still returning, and must stop the server like any later one.
        for stop_on in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop_on, _stop)
        print(server.base_url, flush=True)
        # In slices: a signal the OS hands to the server's thread only sets Python's
        # flag, which the main thread acts on when it next runs Python code.
        while True:
            time.sleep(WAKE_EVERY)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    errors = server.errors
    for error in errors:
        print(error, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
