"""What run_python displays is drawn in the cell and reaches the model as images,
through a real kernel and the scripted model server: a figure left open, a
DataFrame's table, `@name` of a figure, read_file on a PNG, a huge image downscaled under
the limit, a model that reads no images, and secrets still redacted."""

from __future__ import annotations

import base64
import io
import json
import os
from typing import Any

import pytest
from PIL import Image

from co_kernel.notebook import MAX_BYTES
from tests.support.kernel_harness import WidgetClicker

FIGURE = (
    "import matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(4, 3))\n"
    "plt.plot([1, 3, 2], label='revenue')\n"
    "plt.title('by month')"
)
SECRET = "sk-compat-rich-outputs-5d1e9a7c3b"


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def _image_urls(body: dict[str, Any]) -> list[str]:
    """The data URLs of the image parts a chat completions request carries."""
    urls = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if part.get("type") == "image_url":
                    urls.append(part["image_url"]["url"])
    return urls


def _decoded(url: str) -> Image.Image:
    header, _, data = url.partition(",")
    assert header.startswith("data:image/") and header.endswith(";base64")
    return Image.open(io.BytesIO(base64.b64decode(data)))


def _tool_message(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "tool")


def _displays(turn) -> list[dict[str, Any]]:
    return [m["content"] for m in turn.of_type("display_data")]


def test_a_figure_left_open_is_drawn_under_the_card_and_sent_as_an_image(
    start_kernel, model_server
):
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    model_server.extend(
        [
            call("run_python", code=FIGURE),
            {"expect": {"tool_result_contains": "PNG"}, "text": "Revenue dips in month 3."},
        ]
    )
    clicker = WidgetClicker(["Approve"])
    turn = kernel.execute("plot revenue by month", cell_id="cell-plot", on_message=clicker)
    assert turn.status == "ok", turn.text()
    assert model_server.errors == [] and [c for c, _ in clicker.clicked] == ["Approve"]
    shown = _displays(turn)
    card = next(i for i, d in enumerate(shown) if "application/vnd.co.tool-call+json" in d["data"])
    figures = [i for i, d in enumerate(shown) if "image/png" in d["data"]]
    assert len(figures) == 1 and figures[0] > card, "one figure, drawn under the card"
    figure = shown[figures[0]]
    assert figure["data"]["text/plain"].startswith("<Figure size 400x300")
    # Tagged like every output of Co, so a reloaded page finds its cell; saved with it.
    assert figure["metadata"]["co"]["cell"] == "cell-plot"
    png = Image.open(io.BytesIO(base64.b64decode(figure["data"]["image/png"])))
    assert png.format == "PNG"

    after = model_server.requests[-1]
    [url] = _image_urls(after)
    sent = _decoded(url)
    assert sent.size == png.size
    assert f"PNG {sent.width}x{sent.height} figure" in _tool_message(after)
    # The file travels framed as the tool's, not as something the person uploaded.
    framing = [
        part.get("text", "")
        for m in after["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for part in m["content"]
    ]
    assert any(t.startswith('<pyai:tool_result tool_name="run_python"') for t in framing)
    assert "Revenue dips in month 3." in turn.markdown()
    again = kernel.execute("%%python\nimport matplotlib.pyplot as plt\nplt.get_fignums()")
    assert again.of_type("execute_result")[0]["content"]["data"]["text/plain"] == "[]", (
        "the inline backend closed the figure it drew, as after a cell"
    )


def test_a_dataframe_as_the_last_expression_is_drawn_as_its_table(start_kernel, model_server):
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    code = "import pandas as pd\npd.DataFrame({'month': ['Jan', 'Feb'], 'revenue': [10, 7]})"
    model_server.extend(
        [
            call("run_python", code=code),
            {"expect": {"tool_result_contains": "revenue"}, "text": "Two months."},
        ]
    )
    turn = kernel.execute("show the table", mode="headless")
    assert turn.status == "ok" and model_server.errors == []
    [table] = [d for d in _displays(turn) if "<table" in str(d["data"].get("text/html", ""))]
    assert 'class="dataframe"' in table["data"]["text/html"]
    assert "Feb" in table["data"]["text/plain"]
    body = model_server.requests[-1]
    assert _image_urls(body) == []
    assert "Jan" in _tool_message(body) and "<table" not in _tool_message(body)


def test_at_name_of_a_figure_sends_its_image_with_the_prompt(start_kernel, model_server):
    kernel = start_kernel()
    assert kernel.execute(f"%%python\n{FIGURE}\nfig = plt.gcf()").status == "ok"
    model_server.extend([{"expect": {"last_user_contains": "### @fig"}, "text": "A line."}])
    turn = kernel.execute("What does @fig show?")
    assert turn.status == "ok" and model_server.errors == []
    body = model_server.requests[-1]
    [url] = _image_urls(body)
    assert _decoded(url).format == "PNG"
    prompt = json.dumps(body["messages"][-1])
    assert "image of @fig (attached below)" in prompt


def test_read_file_on_a_png_sends_an_image(start_kernel, model_server, workspace):
    Image.new("RGB", (320, 200), "orange").save(workspace / "chart.png")
    kernel = start_kernel()
    model_server.extend(
        [
            call("read_file", path="chart.png"),
            {"expect": {"tool_result_contains": "PNG 320x200"}, "text": "An orange box."},
        ]
    )
    turn = kernel.execute("What is in chart.png?", mode="headless")
    assert turn.status == "ok" and model_server.errors == []
    [url] = _image_urls(model_server.requests[-1])
    sent = _decoded(url)
    assert sent.size == (320, 200) and sent.getpixel((5, 5)) == (255, 165, 0)


def test_a_huge_image_is_downscaled_under_the_limit_with_a_note(
    start_kernel, model_server, workspace
):
    noise = Image.frombytes("RGB", (2400, 1800), os.urandom(2400 * 1800 * 3))
    noise.save(workspace / "photo.png")
    assert (workspace / "photo.png").stat().st_size > 5 * MAX_BYTES
    kernel = start_kernel()
    model_server.extend(
        [
            call("read_file", path="photo.png"),
            {"expect": {"tool_result_contains": "downscaled from 2400x1800"}, "text": "Noise."},
        ]
    )
    turn = kernel.execute("Look at photo.png", mode="headless")
    assert turn.status == "ok" and model_server.errors == []
    body = model_server.requests[-1]
    [url] = _image_urls(body)
    assert len(url.partition(",")[2]) <= 200_000, "at most 200 KB on the wire"
    sent = _decoded(url)
    assert max(sent.size) <= 1568
    note = _tool_message(body)
    assert f"{sent.width}x{sent.height}" in note and "image limit" in note


def test_a_model_that_reads_no_images_gets_one_line(start_kernel, model_server, workspace):
    Image.new("RGB", (64, 48), "blue").save(workspace / "small.png")
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve", "CO_MODEL_ACCEPTS_IMAGES": "false"})
    model_server.extend(
        [
            call("run_python", code=FIGURE),
            {
                "expect": {"tool_result_contains": "not sent: this model reads no images"},
                **call("read_file", path="small.png"),
            },
            {"expect": {"tool_result_contains": "PNG 64x48 image file small.png"}, "text": "ok"},
        ]
    )
    turn = kernel.execute("plot it, then look at small.png", mode="headless")
    assert turn.status == "ok" and model_server.errors == []
    assert all(_image_urls(body) == [] for body in model_server.requests)
    assert "figure" in _tool_message(model_server.requests[1])
    # The person still sees the figure in the cell.
    assert any("image/png" in d["data"] for d in _displays(turn))


@pytest.mark.parametrize("mode", ["notebook", "headless"])
def test_secrets_in_what_python_shows_are_redacted(start_kernel, model_server, mode):
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve", "CO_API_KEY": SECRET})
    code = (
        "import os, pandas as pd\n"
        "key = os.environ['CO_API_KEY']\n"
        "print('the key is', key)\n"
        "pd.DataFrame({'name': ['compat'], 'key': [key]})"
    )
    model_server.extend([call("run_python", code=code), {"text": "Done."}])
    turn = kernel.execute("show my key", mode=mode, on_message=WidgetClicker(["Approve"]))
    assert turn.status == "ok" and model_server.errors == []
    assert SECRET not in json.dumps(model_server.requests[-1]["messages"])
    assert "[REDACTED]" in _tool_message(model_server.requests[-1])
    outputs = json.dumps([m["content"] for m in turn.messages])
    assert SECRET not in outputs
    assert any("[REDACTED]" in str(d["data"].get("text/html", "")) for d in _displays(turn))


def test_only_the_images_of_the_last_two_turns_are_sent_again(
    start_kernel, model_server, workspace
):
    sizes = {"one.png": (320, 200), "two.png": (300, 100), "three.png": (200, 150)}
    for name, size in sizes.items():
        Image.new("RGB", size, "orange").save(workspace / name)
    kernel = start_kernel()
    for name in sizes:
        model_server.extend([call("read_file", path=name), {"text": f"Read {name}."}])
        turn = kernel.execute(f"Look at {name}", mode="headless")
        assert turn.status == "ok" and model_server.errors == []
    body = model_server.requests[-1]
    # The newest request carries the images of this turn and the one before; the first
    # image travels as its one line, and the model's own text about it is still there.
    assert [_decoded(url).size for url in _image_urls(body)] == [(300, 100), (200, 150)]
    sent = json.dumps(body["messages"])
    assert "[Co: PNG image 320x200, 1 KB, shown earlier; not sent again]" in sent
    assert "Read one.png." in sent
    # When it was new, the first image was sent as an image.
    assert [_decoded(url).size for url in _image_urls(model_server.requests[1])] == [(320, 200)]
