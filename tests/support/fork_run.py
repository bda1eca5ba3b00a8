"""Run a helper program of the tests as a child of the test run's fork server.

    python tests/support/fork_run.py SOCKET SCRIPT [ARG ...]
    python tests/support/fork_run.py SOCKET -m MODULE [ARG ...]

The MCP servers the tests start (``tests/mcp/servers``, ``mcp_server_git``) spent about
1 s of CPU each importing the MCP SDK; the fork server (``tests/support/kernel_forkserver.py``)
has imported it already. This launcher is what the client starts (a Co kernel, over
stdio): it hands its standard input, output and error to a forked child that runs the
program, keeps none of them open itself (so end of file and broken pipes reach the
program and the client as they would), passes on SIGTERM, SIGINT and SIGHUP, and exits
with the program's status. Standard library only: it starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time


def main() -> int:
    path, *rest = sys.argv[1:] or [""]
    if not rest or (rest[0] == "-m" and len(rest) < 2):
        print(__doc__, file=sys.stderr)
        return 2
    if rest[0] == "-m":
        program: str | list[str] = ["-m", rest[1]]
        argv = rest[2:]
    else:
        program, argv = os.path.abspath(rest[0]), rest[1:]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.connect(path)
    request = {
        "op": "spawn",
        "program": program,
        "argv": argv,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
    }
    data = (json.dumps(request) + "\n").encode()
    sent = socket.send_fds(server, [data], [0, 1, 2])
    server.sendall(data[sent:])
    replies = server.makefile("r")
    pid = int(json.loads(replies.readline())["pid"])

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    # The program holds the pipes now; this process's copies would keep them open.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    while True:
        server.sendall((json.dumps({"op": "poll", "pid": pid}) + "\n").encode())
        code = json.loads(replies.readline())["code"]
        if code is not None:
            return code if code >= 0 else 128 - code
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
