"""Running a notebook the way `pytest --nbval` does, and storing the outputs it will compare.

nbval sends each cell without a cellId and with stdin closed, so Co answers it headless
(one final output per part, approvals by `approval_mode`); JupyterLab and nbclient send a
cellId and get the live notebook frontend, whose outputs differ. `execute_as_nbval` runs
every code cell exactly as nbval does and writes the outputs and execution counts back
into the notebook (nbval only compares cells that have an execution count).
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["execute_as_nbval"]

OUTPUT_TIMEOUT = 300.0
"""Seconds to wait for the next message of a cell (a local model can be slow)."""


def _outputs(kc: Any, msg_id: str) -> list[Any]:
    import nbformat

    outputs: list[Any] = []
    while True:
        msg = kc.get_iopub_msg(timeout=OUTPUT_TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "idle":
            return outputs
        if kind == "stream":
            # nbval joins a cell's stream chunks per name before comparing; store them joined.
            same = [o for o in outputs if o.output_type == "stream" and o.name == content["name"]]
            if same:
                same[0].text += content["text"]
            else:
                outputs.append(
                    nbformat.v4.new_output("stream", name=content["name"], text=content["text"])
                )
        elif kind in ("display_data", "execute_result"):
            outputs.append(
                nbformat.v4.new_output(
                    "display_data", data=content["data"], metadata=content["metadata"]
                )
            )
        elif kind == "error":
            outputs.append(
                nbformat.v4.new_output(
                    "error",
                    ename=content["ename"],
                    evalue=content["evalue"],
                    traceback=content["traceback"],
                )
            )


def execute_as_nbval(
    path: Path,
    env: Mapping[str, str],
    *,
    report: Callable[[str], None] = print,
) -> int:
    """Run every code cell of the notebook at ``path`` as nbval does, in a kernel started
    in its folder with ``env``, and store the outputs; returns how many cells failed.

    A cell that replies with an error is reported (with a hint when it lacks nbval's
    ``raises-exception`` tag); a kernel that stops answering counts as one more failure
    and leaves the notebook unwritten.
    """
    import nbformat
    from jupyter_client.manager import KernelManager

    nb = nbformat.read(path, as_version=4)
    km = KernelManager(kernel_name=nb.metadata.get("kernelspec", {}).get("name", "co"))
    km.start_kernel(cwd=str(path.parent.resolve()), env=dict(env))
    kc = km.client()
    kc.start_channels()
    errors = 0
    try:
        kc.wait_for_ready(timeout=120)
        count = 0
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            count += 1
            msg_id = kc.execute(
                cell.source, store_history=False, allow_stdin=False, stop_on_error=False
            )
            cell.outputs = _outputs(kc, msg_id)
            reply = kc.get_shell_msg(timeout=OUTPUT_TIMEOUT)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = kc.get_shell_msg(timeout=OUTPUT_TIMEOUT)
            cell.execution_count = count
            cell.metadata.pop("execution", None)
            if reply["content"]["status"] == "error":
                errors += 1
                tags = cell.metadata.get("tags", [])
                note = "" if "raises-exception" in tags else "  (no raises-exception tag)"
                report(
                    f"{path.name}: cell {count} replied error: {reply['content'].get('evalue')}{note}"
                )
    except queue.Empty:
        report(f"{path.name}: timed out waiting for the kernel")
        return errors + 1
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    nbformat.write(nb, path)
    return errors
