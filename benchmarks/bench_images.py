"""How large a 1000x1000-pixel figure reaches the model, beside the figure as drawn.

A real Co kernel and the scripted model server: for each kind of figure, the model asks
``run_python`` to draw a 10x10-inch figure at 100 dpi and leave it open; the inline
backend draws it in the cell, and the next request the server receives carries the image.
Measured: the base64 of the image in that request body (what reaches the model), beside
the baseline in the same run, the PNG the cell shows (what would be sent without the
limit), and the time from the tool call's card to its result (drawing, capturing and
preparing the image). Target: at most 200 KB on the wire for every kind, a plot of noise
included. The images sent are written to a temporary folder, named in the output.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_images.py
"""

from __future__ import annotations

import argparse
import base64
import io
import tempfile
from pathlib import Path
from typing import Any

from _common import ms, print_table, verdict
from PIL import Image

from co_kernel.replay import ScriptedModelServer
from tests.support.kernel_harness import CoKernel, ensure_kernelspec

TARGET_BYTES = 200_000
SETUP = (
    "%%python\nimport matplotlib.pyplot as plt, numpy as np\n"
    # The whole canvas, 1000x1000, as drawn (the inline backend crops to the tight box).
    "get_ipython().run_line_magic('config', \"InlineBackend.print_figure_kwargs = {'bbox_inches': None}\")"
)
FIGURES = {
    "line plot": "plt.plot(np.cumsum(np.random.default_rng(1).normal(size=365)))",
    "scatter, 20k points": (
        "xy = np.random.default_rng(2).normal(size=(2, 20000))\n"
        "plt.scatter(xy[0], xy[1], s=2, c=xy[0], cmap='viridis')"
    ),
    "heat map of noise": (
        "plt.imshow(np.random.default_rng(3).random((1000, 1000)), cmap='magma')\nplt.axis('off')"
    ),
}


def _sent(body: dict[str, Any]) -> str | None:
    """The base64 of the last image part of a chat completions request."""
    found = None
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if part.get("type") == "image_url":
                    found = part["image_url"]["url"].partition(",")[2]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    ensure_kernelspec()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer([]) as server:
        home, workspace = Path(tmp, "home"), Path(tmp, "workspace")
        home.mkdir()
        workspace.mkdir()
        out = Path(tempfile.mkdtemp(prefix="co-bench-images-"))
        env = {
            "CO_HOME": str(home),
            "CO_SANDBOX": "subprocess",
            "CO_MODEL": "compat:scripted",
            "CO_BASE_URL": server.base_url,
            "CO_APPROVAL_MODE": "approve",
        }
        kernel = CoKernel(env, workspace)
        try:
            if kernel.execute(SETUP).status != "ok":
                print("setting the figure up failed")
                return 0
            for i, (kind, code) in enumerate(FIGURES.items()):
                draw = f"plt.figure(figsize=(10, 10), dpi=100)\n{code}"
                server.extend(
                    [
                        {"tool_calls": [{"name": "run_python", "arguments": {"code": draw}}]},
                        {"text": "ok"},
                    ]
                )
                result = kernel.execute(f"draw {kind}", mode="headless", timeout=120)
                drawn = [
                    m["content"]["data"]["image/png"]
                    for m in result.of_type("display_data")
                    if "image/png" in m["content"]["data"]
                ]
                sent = _sent(server.requests[-1])
                if result.status != "ok" or not drawn or sent is None:
                    print(f"{kind}: no figure reached the model ({result.reply['content']})")
                    continue
                image = Image.open(io.BytesIO(base64.b64decode(sent)))
                shown = Image.open(io.BytesIO(base64.b64decode(drawn[0])))
                path = out / f"{i}-{kind.split(',')[0].replace(' ', '-')}.{image.format.lower()}"
                path.write_bytes(base64.b64decode(sent))
                rows.append(
                    (
                        kind,
                        f"{len(sent) / 1000:.0f} KB {image.format} {image.width}x{image.height}",
                        f"{len(drawn[0]) / 1000:.0f} KB PNG {shown.width}x{shown.height}",
                        f"{len(sent) / len(drawn[0]):.2f}x",
                        ms(result.replied_at - result.sent_at),
                        verdict(len(sent) <= TARGET_BYTES),
                    )
                )
        finally:
            kernel.shutdown()
    print_table(
        "A 1000x1000 figure as the model receives it (base64 in the request), "
        "beside the figure as the cell draws it (target: at most 200 KB)",
        ["figure", "sent to the model", "baseline: drawn", "ratio", "cell", "target"],
        rows,
    )
    print(f"\nThe images sent are in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
