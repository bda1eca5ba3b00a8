"""Without a sandbox, the shell says so.

With ``sandbox = subprocess`` the first ``!`` cell of a session and every shell tool card
say that the command runs on the host, not in a sandbox; a real kernel in notebook mode.
"""

from __future__ import annotations

import os

from tests.support.cells import tool_cards
from tests.support.kernel_harness import WidgetClicker
from tests.support.scripted import shell

HOST = "ON THE HOST"


def test_the_first_bang_cell_says_it_runs_on_the_host(kernel) -> None:
    first = kernel.execute("!echo one")
    assert first.status == "ok"
    assert first.stdout == "one\n"
    assert HOST in first.stderr and f"uid {os.getuid()}" in first.stderr
    assert "not in a sandbox" in first.stderr

    second = kernel.execute("!echo two")
    assert second.stdout == "two\n"
    assert HOST not in second.stderr + second.stdout


def test_every_shell_tool_card_says_it_runs_on_the_host(kernel, model_server) -> None:
    model_server.extend(
        [
            {"tool_calls": [shell("ls")]},  # a safe command: approved without asking
            {"tool_calls": [shell("touch made")]},  # asks
            {"text": "done"},
        ]
    )
    result = kernel.execute("list and touch", on_message=WidgetClicker(["Approve"]))

    shown = tool_cards(result)
    assert len(shown) == 2, shown
    for card in shown:
        assert HOST in str(card["detail"]), card
        assert "on the host, not in a sandbox" in str(card["result"]), card
