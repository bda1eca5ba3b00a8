"""`co-kernel scrub`: the Markdown an older Co saved becomes safe HTML."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat

HOSTILE = '**Hi** <img src=x onerror="alert(1)">'


def co_kernel(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a person runs it (the venv's entry point)."""
    command = Path(sys.executable).with_name("co-kernel")
    return subprocess.run([str(command), *args], capture_output=True, text=True, timeout=60)


def old_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    co = nbformat.v4.new_output(
        "display_data", data={"text/markdown": HOSTILE}, metadata={"co": {"request": "r1"}}
    )
    other = nbformat.v4.new_output("display_data", data={"text/markdown": HOSTILE})
    nb.cells = [
        nbformat.v4.new_code_cell("ask", outputs=[co]),
        nbformat.v4.new_code_cell("display(Markdown(...))", outputs=[other]),
        nbformat.v4.new_markdown_cell("# Notes"),
    ]
    nbformat.write(nb, path)


def test_scrub_rewrites_only_what_co_wrote(tmp_path: Path) -> None:
    path = tmp_path / "old.ipynb"
    old_notebook(path)
    done = co_kernel("scrub", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{path}: 1 output(s) re-rendered as safe HTML\n"
    nb = nbformat.read(path, as_version=4)  # still a valid notebook
    nbformat.validate(nb)
    co, other = (cell.outputs[0] for cell in nb.cells[:2])
    assert "text/markdown" not in co.data
    assert co.data["text/html"] == (
        '<div class="co-markdown"><p><strong>Hi</strong> <img src="x"></p>\n</div>'
    )
    assert co.data["text/plain"] == HOSTILE
    assert co.metadata == {"co": {"request": "r1"}}
    assert other.data == {"text/markdown": HOSTILE}, "another kernel's output is not Co's"

    again = co_kernel("scrub", str(path))
    assert again.stdout == f"{path}: nothing to change\n"


def test_scrub_says_what_it_cannot_read_and_goes_on(tmp_path: Path) -> None:
    good = tmp_path / "good.ipynb"
    old_notebook(good)
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    missing = tmp_path / "missing.ipynb"
    done = co_kernel("scrub", str(missing), str(broken), str(good))
    assert done.returncode == 2
    assert f"co-kernel scrub: {missing}: no such file" in done.stderr
    assert f"co-kernel scrub: {broken}: not a notebook Co can read" in done.stderr
    assert "1 output(s) re-rendered" in done.stdout
    assert broken.read_text() == "{not json"
    assert "Traceback" not in done.stderr
    assert json.loads(good.read_text())["cells"][0]["outputs"][0]["data"]["text/html"]


def test_scrub_turns_the_live_images_co_saved_as_html_into_placeholders(tmp_path: Path) -> None:
    """The HTML today's Co saved before click-to-load: its remote images load on opening."""
    saved = (
        '<div class="co-markdown"><p>Status <img src="http://198.51.100.7/c?d=s%20k" alt="s">'
        '</p>\n<table><tbody><tr><td><img src="//198.51.100.7/t"></td></tr></tbody></table>'
        '<p><img src="plot.png" alt="local"></p></div>'
    )
    nb = nbformat.v4.new_notebook()
    co = nbformat.v4.new_output(
        "display_data",
        data={"text/html": saved, "text/plain": "Status"},
        metadata={"co": {"request": "r1"}},
    )
    other = nbformat.v4.new_output("display_data", data={"text/html": saved})
    nb.cells = [nbformat.v4.new_code_cell("ask", outputs=[co, other])]
    path = tmp_path / "today.ipynb"
    nbformat.write(nb, path)

    done = co_kernel("scrub", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{path}: 1 output(s) re-rendered as safe HTML\n"
    mine, theirs = nbformat.read(path, as_version=4).cells[0].outputs
    html = mine.data["text/html"]
    assert 'src="http' not in html and 'src="//' not in html
    assert html.count('class="co-remote-image"') == 2
    assert 'href="http://198.51.100.7/c?d=s%20k"' in html
    assert "http://198.51.100.7/c?d=s k</code>" in html
    assert '<img src="plot.png" alt="local">' in html
    assert mine.data["text/plain"] == "Status"
    assert theirs.data["text/html"] == saved, "another kernel's output is not Co's"
    assert co_kernel("scrub", str(path)).stdout == f"{path}: nothing to change\n"
