"""Who gets terminal text: only a client that asks for it (`jupyter console` with Co's config).

Every other client shows the answer as Markdown ``display_data``, whatever its
``allow_stdin`` says: a jupyter_client with its defaults, nbclient, JupyterLab (``cellId``).
`jupyter console` itself is driven in a terminal in test_console.py and test_matrix.py.
"""

from __future__ import annotations

from typing import Any

import nbformat
from nbclient import NotebookClient

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CellResult, CoKernel, markdown_source

ANSWER = "The capital of **France** is *Paris*."
PROMPT = "Which city is the capital of France?"


def _shown_as_markdown(messages: list[dict[str, Any]]) -> list[str]:
    """The Markdown of every rendered answer among ``messages``; asserts no stdout text."""
    result = CellResult(reply={}, messages=messages)
    assert result.stdout == "", result.stdout
    return [md for md in map(markdown_source, result.final_displays().values()) if md]


def test_only_a_client_that_asks_gets_terminal_text(
    kernel: CoKernel, model_server: ScriptedModelServer
) -> None:
    model_server.extend([{"text": ANSWER}] * 4)

    # jupyter_client's defaults: allow_stdin=True, no metadata.
    msg_id = kernel.kc.execute(PROMPT)
    seen = kernel.wait_for(msg_id, lambda m: m["content"].get("execution_state") == "idle")
    assert kernel.kc.get_shell_msg(timeout=30)["content"]["status"] == "ok"
    assert _shown_as_markdown(seen) == [ANSWER]

    # JupyterLab and Notebook 7 name the cell.
    notebook = kernel.execute(PROMPT, mode="notebook")
    assert notebook.status == "ok" and _shown_as_markdown(notebook.messages) == [ANSWER]

    # jupyter console with Co's config asks for terminal text: the answer on stdout (as
    # Markdown source here, where the kernel finds no terminal to render it for).
    console = kernel.execute(PROMPT, mode="console")
    assert console.status == "ok"
    assert console.stdout == ANSWER + "\n", console.stdout
    assert not console.of_type("display_data", "update_display_data")

    # nbclient (jupyter execute, nbconvert, papermill) on the same kernel.
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(PROMPT)]
    client = NotebookClient(nb, km=kernel.km, timeout=60)
    try:
        client.execute()
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
    [output] = nb.cells[0].outputs
    assert output["output_type"] == "display_data", output
    assert markdown_source(output["data"]) == ANSWER
