"""Record a regression notebook's outputs the way `pytest --nbval` will check them.

    .venv/bin/python scripts/record_notebook.py notebooks/01-magics.ipynb [...]

nbval sends each cell without a cellId and with stdin closed, so Co answers it headless
(one final output per part, approvals by `approval_mode`); JupyterLab and nbclient send a
cellId and get the live notebook frontend, whose outputs differ. This runs every code cell
exactly as nbval does, in a fresh `CO_HOME` as `notebooks/conftest.py` gives it, and writes
the outputs and execution counts back into the notebook (nbval only compares cells that
have an execution count). Review the diff before committing it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import queue
import shutil
import sys
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.manager import KernelManager

_OUTPUT_TIMEOUT = 300.0


def _conftest(folder: Path) -> Any:
    """The notebooks' conftest, for the environment nbval gives each notebook's kernel."""
    spec = importlib.util.spec_from_file_location("_notebooks_conftest", folder / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outputs(kc: Any, msg_id: str) -> list[nbformat.NotebookNode]:
    outputs: list[nbformat.NotebookNode] = []
    while True:
        msg = kc.get_iopub_msg(timeout=_OUTPUT_TIMEOUT)
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


def record(path: Path) -> int:
    """Run every code cell of the notebook at ``path`` and store its outputs; return error replies."""
    nb = nbformat.read(path, as_version=4)
    conftest = _conftest(path.parent)
    home = conftest.new_co_home(path.stem)
    km = KernelManager(kernel_name=nb.metadata.get("kernelspec", {}).get("name", "co"))
    km.start_kernel(cwd=str(path.parent.resolve()), env=conftest.notebook_env(os.environ, home))
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
            reply = kc.get_shell_msg(timeout=_OUTPUT_TIMEOUT)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = kc.get_shell_msg(timeout=_OUTPUT_TIMEOUT)
            cell.execution_count = count
            cell.metadata.pop("execution", None)
            if reply["content"]["status"] == "error":
                errors += 1
                tags = cell.metadata.get("tags", [])
                note = "" if "raises-exception" in tags else "  (no raises-exception tag)"
                print(
                    f"{path.name}: cell {count} replied error: {reply['content'].get('evalue')}{note}"
                )
    except queue.Empty:
        print(f"{path.name}: timed out waiting for the kernel", file=sys.stderr)
        return errors + 1
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
        shutil.rmtree(home, ignore_errors=True)
    nbformat.write(nb, path)
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.notebooks:
        record(path)
        print(f"recorded {path}")


if __name__ == "__main__":
    main()
