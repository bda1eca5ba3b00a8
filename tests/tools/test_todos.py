"""Todos through a real kernel: the checklist updated in place, kept across turns, cleared."""

from __future__ import annotations

from typing import Any

from co_kernel.frontend import MIME_TOOL_CALL
from co_kernel.frontend._todos import MIME_TODOS
from tests.support.kernel_harness import CellResult
from tests.support.scripted import tool_results_sent


def write(*items: tuple[str, str]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "name": "write_todos",
                "arguments": {"items": [{"content": c, "status": s} for c, s in items]},
            }
        ]
    }


def read() -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_todos", "arguments": {}}]}


def checklist_messages(result: CellResult) -> list[dict[str, Any]]:
    return [
        m
        for m in result.of_type("display_data", "update_display_data")
        if MIME_TODOS in m["content"]["data"]
    ]


PLAN = ("Load the data", "Clean it", "Plot it")


def test_the_checklist_updates_in_place_as_the_agent_works_through_it(kernel, model_server):
    a, b, c = PLAN
    model_server.extend(
        [
            {"expect": {"tools_include": ["write_todos", "read_todos"]}, **write(
                (a, "in_progress"), (b, "pending"), (c, "pending"))},
            {"expect": {"tool_result_contains": "Todos: 0 of 3 completed"}, **write(
                (a, "completed"), (b, "in_progress"), (c, "pending"))},
            write((a, "completed"), (b, "completed"), (c, "completed")),
            {"expect": {"tool_result_contains": "3. [x] Plot it"}, "text": "All three done."},
        ]
    )  # fmt: skip
    result = kernel.execute("Load, clean and plot the data")
    assert result.status == "ok" and model_server.errors == []
    shown = checklist_messages(result)
    # One output: shown once, then updated in place under the same display id.
    assert [m["msg_type"] for m in shown] == [
        "display_data",
        "update_display_data",
        "update_display_data",
    ]
    assert len({m["content"]["transient"]["display_id"] for m in shown}) == 1
    first, second, last = (m["content"]["data"] for m in shown)
    assert first[MIME_TODOS]["todos"][0] == {"content": a, "status": "in_progress"}
    # Rendered by Co to HTML; never sent as raw Markdown.
    assert "text/markdown" not in first and "text/markdown" not in second
    assert "<li>[ ] <strong>Load the data</strong> ⏳</li>" in first["text/html"]
    assert "<strong>Todos</strong> · 1 of 3 done" in second["text/html"]
    assert "<li>[x] <s>Load the data</s>" in second["text/html"]
    assert "[~] Clean it (in progress)" in second["text/plain"]
    assert [t["status"] for t in last[MIME_TODOS]["todos"]] == ["completed"] * 3
    cards = [d[MIME_TOOL_CALL] for d in result.final_displays().values() if MIME_TOOL_CALL in d]
    assert [c["tool"] for c in cards] == ["write_todos"] * 3
    assert cards[0]["args"]["items"][1] == {"content": b, "status": "pending"}
    assert result.markdown().endswith("All three done.")


def test_todos_survive_across_turns_and_clear_empties_them(kernel, model_server):
    model_server.extend(
        [
            write(("Draft the report", "in_progress"), ("Send it", "pending")),
            {"text": "Planned."},
            read(),
            {"expect": {"tool_result_contains": "1. [~] Draft the report"}, "text": "Still on it."},
        ]
    )
    assert kernel.execute("Plan the report").status == "ok"
    second = kernel.execute("Where are we?")
    assert second.status == "ok" and model_server.errors == []
    # Reading changes nothing, so the second cell shows no checklist.
    assert checklist_messages(second) == []

    cleared = kernel.execute("%clear")
    assert cleared.status == "ok"
    model_server.extend(
        [read(), {"expect": {"tool_result_contains": "The todo list is empty."}, "text": "Empty."}]
    )
    assert kernel.execute("And now?").status == "ok"
    assert model_server.errors == []


def test_bad_items_are_sent_back_to_the_model_and_nothing_is_shown(kernel, model_server):
    model_server.extend(
        [
            write(("One", "in_progress"), ("Two", "in_progress")),
            {"expect": {"tool_result_contains": "Items 1, 2 are all `in_progress`"}, **write(
                ("One", "doing"))},
            {"expect": {"tool_result_contains": "in_progress"}, **write(
                ("One", "in_progress"), ("Two", "pending"))},
            {"text": "Fixed."},
        ]
    )  # fmt: skip
    kernel_result = kernel.execute("Plan two steps")
    assert kernel_result.status == "ok" and model_server.errors == []
    # The status is checked against its three values (the schema's enum).
    assert (
        "'pending', 'in_progress' or 'completed'"
        in tool_results_sent(model_server, distinct=True)[1]
    )
    shown = checklist_messages(kernel_result)
    assert len(shown) == 1  # only the valid list reached the checklist
    assert shown[0]["content"]["data"][MIME_TODOS]["todos"] == [
        {"content": "One", "status": "in_progress"},
        {"content": "Two", "status": "pending"},
    ]


def test_console_prints_the_list_and_headless_shows_it_once_at_the_end(start_kernel, model_server):
    steps = [
        write(("Fetch", "in_progress"), ("Sum", "pending")),
        write(("Fetch", "completed"), ("Sum", "completed")),
        {"text": "Summed."},
    ]
    kernel = start_kernel()
    model_server.extend(steps)
    console = kernel.execute("Fetch and sum", mode="console")
    assert console.status == "ok"
    assert "Todos · 0 of 2 done\n  [~] Fetch (in progress)\n  [ ] Sum\n" in console.stdout
    assert "Todos · 2 of 2 done\n  [x] Fetch\n  [x] Sum\n" in console.stdout
    assert not console.of_type("update_display_data")

    model_server.extend(steps)
    headless = kernel.execute("Fetch and sum again", mode="headless")
    assert headless.status == "ok" and model_server.errors == []
    shown = checklist_messages(headless)
    assert [m["msg_type"] for m in shown] == ["display_data"]
    assert (
        shown[0]["content"]["data"]["text/plain"] == "Todos · 2 of 2 done\n  [x] Fetch\n  [x] Sum"
    )


def test_an_empty_item_is_refused_and_the_list_is_kept(kernel, model_server):
    model_server.extend(
        [
            write(("Keep me", "pending")),
            write(("  ", "pending")),
            {"expect": {"tool_result_contains": "Item 1 has no `content`"}, **read()},
            {"expect": {"tool_result_contains": "1. [ ] Keep me"}, "text": "Kept."},
        ]
    )
    result = kernel.execute("Plan")
    assert result.status == "ok" and model_server.errors == []
    assert len(checklist_messages(result)) == 1


def test_resume_brings_the_todo_list_back(start_kernel, model_server):
    """The list as the conversation's last write_todos left it: a refused write (two items
    in progress) does not count."""
    first = start_kernel()
    model_server.extend(
        [
            write(("Draft the report", "completed"), ("Send it", "in_progress")),
            {"text": "Planned."},
            write(("A", "in_progress"), ("B", "in_progress")),  # refused: sent back
            {"text": "Kept."},
        ]
    )
    assert first.execute("Plan the report").status == "ok"
    first.shutdown()

    second = start_kernel()
    resumed = second.execute("%resume")
    assert resumed.status == "ok", resumed.text()
    assert "Its todo list is back" in resumed.text()
    assert "2. [~] Send it" in resumed.text()
    model_server.extend(
        [read(), {"expect": {"tool_result_contains": "1. [x] Draft the report"}, "text": "On it."}]
    )
    assert second.execute("Where are we?").status == "ok"
    assert model_server.errors == []
