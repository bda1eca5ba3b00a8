"""Names from a folder Co has not been told to trust stay text in what a real kernel shows.

A repository is cloned and opened: before the person trusted anything, the first cell's
notices and `%trust show` (what a careful person runs to look at a folder first) name its
settings keys, its MCP servers and its `.co/` files. Written as Markdown images or HTML,
those names would make the page fetch from a host the repository chose. Every output's
HTML (what Co publishes, what the page renders) must hold no image and no link, and each
name must read as it was written.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

from tests.support.kernel_harness import CellResult

OUTSIDE = "127.0.0.1:8412"
"""The host a hostile name points the page at (nothing listens: the HTML shows no request
would be made)."""

KEY = f"![k](http://{OUTSIDE}/notice)"
SERVER = f"srv` <img src=http://{OUTSIDE}/server> `x"
FILE = f"y` ![g](https:{OUTSIDE}?t=x) `.md"
LATER = f"later <img src=https:{OUTSIDE}?later> [l](https:{OUTSIDE}?l) *e*.md"


def _html(result: CellResult) -> str:
    return "\n".join(str(d.get("text/html", "")) for d in result.final_displays().values())


def _read(html: str) -> str:
    """What the page shows, spaces dropped."""
    return re.sub(r"\s+", "", unescape(re.sub(r"<[^>]+>", "", html)))


def _assert_inert(result: CellResult, *names: str) -> None:
    assert result.status == "ok", result.text()
    html = _html(result)
    assert "<img" not in html, html
    assert "<a " not in html, html
    assert OUTSIDE not in re.findall(r'(?:src|href)="([^"]*)"', html), html
    shown = _read(html)
    for name in names:
        assert re.sub(r"\s+", "", name) in shown, (name, shown)


def _repository(workspace: Path, **files: Any) -> None:
    co = workspace / ".co"
    co.mkdir()
    settings = {
        KEY: "x",
        "mcp_servers": {SERVER: {"command": "never-started", "args": [KEY]}},
    }
    (co / "settings.json").write_text(json.dumps(settings))
    (co / FILE).write_text("a file of the repository")


def test_the_first_cell_of_an_untrusted_folder_shows_its_names_as_text(
    start_kernel, workspace: Path
) -> None:
    _repository(workspace)
    kernel = start_kernel(trusted=False)
    first = kernel.execute("%python 1", mode="headless")
    text = _html(first)
    assert "Settingsneedattention" in _read(text) and "bringsCosettings" in _read(text)
    _assert_inert(first, KEY, SERVER)


def test_trust_show_lists_hostile_file_names_as_text(
    start_kernel, workspace: Path, co_home: Path
) -> None:
    _repository(workspace)
    kernel = start_kernel(trusted=False)
    kernel.execute("%python 1", mode="headless")
    shown = kernel.execute("%trust show", mode="headless")
    assert "Filesthatdecideitstrust" in _read(_html(shown))
    _assert_inert(shown, f".co/{FILE}", SERVER)
    # Trusted, then a file is added: the changed files are listed the same way.
    assert kernel.execute("%trust", mode="headless").status == "ok"
    (workspace / ".co" / LATER).write_text("added after trust")
    changed = kernel.execute("%trust show", mode="headless")
    assert "Changedsinceyoutrustedit" in _read(_html(changed))
    _assert_inert(changed, f".co/{LATER}", f".co/{FILE}")
