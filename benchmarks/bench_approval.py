"""Click-to-continue latency of an approval, measured at the Jupyter protocol level.

A real Co kernel (subprocess sandbox) and the scripted model server; each run is one cell
whose model asks for ``run_shell_command``. The benchmark plays JupyterLab: when the
widget card is displayed it sends the Approve button's ``comm_msg`` and times, from that
send, three moments seen on the wire or in the command's own output:

- resumed: the tool-call card turns to "running · approved" (the turn has the answer);
- started: the shell command prints its start time (``date +%s.%N``, same clock);
- finished: the card shows the command's result.

Baseline in the same run: the round trip of a ``kernel_info_request`` on the shell
channel (the least a message to the kernel can cost). Target: median "started" < 50 ms.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_approval.py [--runs 25]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _common import median, ms, print_table, verdict

from co_kernel.frontend import MIME_TOOL_CALL
from co_kernel.replay import ScriptedModelServer
from tests.support.kernel_harness import CoKernel, WidgetClicker, ensure_kernelspec

TARGET_MS = 50.0
COMMAND = "date +%s.%N && true"  # chained, so it is never a safe prefix: always asks


def _card_moment(messages: list[dict], status: str) -> float | None:
    for m in messages:
        data = m["content"].get("data", {})
        if m["msg_type"] == "update_display_data" and MIME_TOOL_CALL in data:
            card = data[MIME_TOOL_CALL]
            if card["status"] == status and card["decision"] == "approved":
                return float(m["_received"])
    return None


def _kernel_info_rtt(kernel: CoKernel) -> float:
    start = time.monotonic()
    kernel.kc.kernel_info(reply=True, timeout=10)
    return time.monotonic() - start


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=25, help="timed approvals (one cell each)")
    args = parser.parse_args()
    ensure_kernelspec()

    resumed: list[float] = []
    started: list[float] = []
    finished: list[float] = []
    baseline: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer([]) as server:
        home, workspace = Path(tmp, "home"), Path(tmp, "workspace")
        home.mkdir()
        workspace.mkdir()
        env = {
            "CO_HOME": str(home),
            "CO_SANDBOX": "subprocess",
            "CO_MODEL": "compat:scripted",
            "CO_BASE_URL": server.base_url,
        }
        kernel = CoKernel(env, workspace)
        try:
            for i in range(args.runs + 1):  # the first run warms imports and the sandbox
                server.extend(
                    [
                        {"tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": COMMAND}}]},
                        {"text": "ok"},
                    ]
                )  # fmt: skip
                clicker = WidgetClicker(["Approve"])
                result = kernel.execute(f"run {i}", on_message=clicker, timeout=60)
                if result.status != "ok" or not clicker.clicked:
                    print(f"run {i} failed: {result.reply['content']}", file=sys.stderr)
                    return 0
                # Wall clock for the command's own stamp; monotonic for wire moments.
                clicked_mono = clicker.clicked[0][1]
                clicked_wall = time.time() - (time.monotonic() - clicked_mono)
                resumed_at = _card_moment(result.messages, "running")
                finished_at = _card_moment(result.messages, "ok")
                last = [c for c in _results(result.messages) if c]
                if i == 0 or resumed_at is None or finished_at is None or not last:
                    continue
                resumed.append(resumed_at - clicked_mono)
                finished.append(finished_at - clicked_mono)
                started.append(float(last[-1].split()[0]) - clicked_wall)
                baseline.append(_kernel_info_rtt(kernel))
        finally:
            kernel.shutdown()
        if server.errors:
            print(f"script errors: {server.errors}", file=sys.stderr)
            return 0

    base = median(baseline)
    rows = [["kernel_info round trip (baseline)", "", ms(base), ms(_p90(baseline)), "1.0x", ""]]
    for name, values, target in (
        ("click -> turn resumed", resumed, None),
        ("click -> command started", started, TARGET_MS / 1000),
        ("click -> result shown", finished, None),
    ):
        mid = median(values)
        rows.append(
            [
                name,
                ms(target) if target else "",
                ms(mid),
                ms(_p90(values)),
                f"{mid / base:.1f}x",
                verdict(mid < target) if target else "",
            ]
        )
    print_table(
        f"Approval click-to-continue, {len(started)} runs (real kernel, subprocess sandbox)",
        ["moment", "target", "median", "p90", "vs baseline", "target met"],
        rows,
    )
    return 0


def _results(messages: list[dict]) -> list[str]:
    """The result text of each tool-call card update, in order (``$ cmd`` then output)."""
    texts = []
    for m in messages:
        data = m["content"].get("data", {})
        if MIME_TOOL_CALL in data and data[MIME_TOOL_CALL].get("result"):
            texts.append(data[MIME_TOOL_CALL]["result"].split("\n", 1)[-1])
    return texts


if __name__ == "__main__":
    sys.exit(main())
