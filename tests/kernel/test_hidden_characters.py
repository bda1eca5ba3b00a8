"""Hidden characters in a proposed change are marked and warned about on the notebook's cards.

A Trojan Source edit (CVE-2021-42574): the bidi override makes the line read as a comment
while the assignment runs. The approval card the person decides on and the tool card the
extension draws afterwards both show it as ``⟨U+202E⟩`` and say what was found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.cells import tool_cards
from tests.support.kernel_harness import CellResult, WidgetClicker

CONTENT = "access = 'user' # \u202e } \u2066if is_admin:\u2069 \u2066 begin admins only\n"


def _widget_html(result: CellResult) -> str:
    """Every HTML widget the cell opened (the approval card's title and body)."""
    states = [
        m["content"]["data"]["state"]
        for m in result.of_type("comm_open")
        if m["content"].get("target_name") == "jupyter.widget"
    ]
    return "\n".join(s["value"] for s in states if s.get("_model_name") == "HTMLModel")


def test_a_bidi_override_in_a_change_is_marked_on_the_cards(
    kernel: Any, model_server: Any, workspace: Path
) -> None:
    call = {"name": "write_file", "arguments": {"path": "auth.py", "content": CONTENT}}
    model_server.extend([{"tool_calls": [call]}, {"text": "Left as it was."}])
    result = kernel.execute("fix auth.py", on_message=WidgetClicker(["Deny"]))
    assert result.status == "ok", result.text()
    assert not (workspace / "auth.py").exists()
    shown = _widget_html(result)
    assert "+access = &#x27;user&#x27; # ⟨U+202E⟩ } ⟨U+2066⟩if is_admin:⟨U+2069⟩" in shown, shown
    assert "\u202e" not in shown and "\u2066" not in shown
    assert "⚠ Hidden characters" in shown and "U+202E RIGHT-TO-LEFT OVERRIDE" in shown, shown
    assert "U+2066 LEFT-TO-RIGHT ISOLATE" in shown, shown
    # The extension's tool card: marked change and arguments, and what was found.
    [card] = tool_cards(result)
    assert card["decision"] == "denied"
    assert "⟨U+202E⟩" in card["detail"] and "\u202e" not in card["detail"]
    assert "⟨U+202E⟩" in card["args"]["content"]
    assert card["hidden"][:2] == ["U+202E RIGHT-TO-LEFT OVERRIDE", "U+2066 LEFT-TO-RIGHT ISOLATE"]


ESC = "\x1b"


def test_a_terminal_clients_error_reply_and_outputs_are_inert(
    kernel: Any, model_server: Any
) -> None:
    # A provider's error message is outside text; jupyter console prints the error
    # output, other terminal clients the reply.
    message = f"Bad request{ESC}]52;c;cm0gLXJmIH4={chr(7)}{ESC}[2J\x9b2K"
    fault = {"status": 400, "body": {"error": {"message": message}}}
    model_server.extend([{"fault": fault, "repeat": 5}])
    result = kernel.execute("hello", mode="console")
    assert result.status == "error"
    content = result.reply["content"]
    shown = [content["evalue"], *content["traceback"], *result.error_lines]
    # The provider's text is inert Markdown in Co's message (brackets escaped) and shown,
    # not obeyed, on the terminal.
    assert any("Bad request␛\\]52;c;cm0gLXJmIH4=␇␛\\[2J⟨U+009B⟩2K" in s for s in shown), shown
    assert not any(ESC in s or "\x9b" in s for s in shown), shown
