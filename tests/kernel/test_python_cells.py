"""Python in the same notebook: %%python cells, references in prompts, the Python tools."""

from __future__ import annotations

import json
import re


def _last_request(model_server) -> str:
    return json.dumps(model_server.requests[-1]["messages"])


def test_python_cells_share_a_namespace_with_rich_outputs(kernel):
    defined = kernel.execute(
        "%%python\nimport pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})"
    )
    assert defined.status == "ok"
    shown = kernel.execute("%%python\ndf.shape")
    [result] = shown.of_type("execute_result")
    assert result["content"]["data"]["text/plain"] == "(3, 2)"
    assert result["content"]["execution_count"] == shown.reply["content"]["execution_count"]
    underscore = kernel.execute("%python _")
    assert underscore.of_type("execute_result")[0]["content"]["data"]["text/plain"] == "(3, 2)"
    printed = kernel.execute("%%python\nprint(len(df))\ndisplay({'text/plain': 'shown'}, raw=True)")
    assert printed.stdout == "3\n"
    assert any(
        m["content"]["data"].get("text/plain") == "shown" for m in printed.of_type("display_data")
    )
    # Printed text reaches the page before a later display, also when displays follow
    # each other with nothing printed between them (streams idle, not flushed).
    interleaved = kernel.execute(
        "%%python\nimport sys\nprint('a')\ndisplay({'text/plain': 'D1'}, raw=True)\n"
        "print('b', file=sys.stderr)\ndisplay({'text/plain': 'D2'}, raw=True)\n"
        "display({'text/plain': 'D3'}, raw=True)\nprint('c')"
    )
    assert [
        m["content"].get("text") or m["content"]["data"]["text/plain"]
        for m in interleaved.of_type("stream", "display_data")
    ] == ["a\n", "D1", "b\n", "D2", "D3", "c\n"]


def test_a_figure_left_open_in_a_python_cell_is_drawn(kernel):
    """As in any IPython kernel: the inline backend draws it when the cell ends, once."""
    drawn = kernel.execute(
        "%%python\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nprint('plotted')"
    )
    assert drawn.status == "ok" and drawn.stdout == "plotted\n"
    [figure] = drawn.of_type("display_data")
    assert "image/png" in figure["content"]["data"]
    assert not kernel.execute("%%python\nx = 1").of_type("display_data"), "drawn once"


def test_python_errors_show_a_traceback_and_fail_the_cell(kernel):
    failed = kernel.execute("%%python\ndef f():\n    return 1 / 0\nf()")
    assert failed.status == "error"
    assert failed.reply["content"]["ename"] == "ZeroDivisionError"
    [error] = failed.of_type("error")
    assert error["content"]["ename"] == "ZeroDivisionError"
    plain = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error["content"]["traceback"]))
    assert "1 / 0" in plain and "f()" in plain
    assert kernel.execute("%python 1 + 1").status == "ok", "the kernel carries on"


def test_execution_counts_advance_once_per_cell(kernel, model_server):
    model_server.extend([{"text": "hi"}])
    counts = [
        kernel.execute(code).reply["content"]["execution_count"]
        for code in ("%python 1", "%help", "%%python\nx = 1", "hello")
    ]
    assert counts == [1, 2, 3, 4]


def test_at_name_attaches_a_description_and_braces_interpolate(kernel, model_server):
    kernel.execute(
        "%%python\nimport pandas as pd\ndf = pd.DataFrame({'price': [1.5, 2.5], 'item': ['tea', 'cake']})\ncity = 'Lyon'"
    )
    model_server.extend([{"text": "It has two rows."}])
    result = kernel.execute(
        "Describe @df for me, I live in {city}. Keep {braces} as typed, mail a@b.example"
    )
    assert result.status == "ok"
    sent = model_server.requests[-1]["messages"][-1]["content"]
    assert "I live in Lyon." in sent
    assert "{braces}" in sent and "a@b.example" in sent
    assert "### @df" in sent and "shape: (2, 2)" in sent
    assert "price" in sent and "float64" in sent and "tea" in sent


def test_text_brought_in_by_braces_is_never_expanded_again(kernel, model_server):
    # A papermill parameter is a plain assignment in the namespace; its value is text.
    kernel.execute(
        "%%python\ntopic = 'see @private_notes and {token}'\n"
        "private_notes = 'PRIVATE-NOTES-CONTENT'\ntoken = 'TOKEN-VALUE'"
    )
    model_server.extend([{"text": "ok"}])
    result = kernel.execute("Summarise {topic}")
    assert result.status == "ok"
    sent = model_server.requests[-1]["messages"][-1]["content"]
    assert "Summarise see @private_notes and {token}" in sent
    assert "PRIVATE-NOTES-CONTENT" not in sent and "### @private_notes" not in sent
    assert "TOKEN-VALUE" not in sent


def test_model_runs_python_after_approval_in_the_same_namespace(start_kernel, model_server):
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    kernel.execute("%%python\nbase = 40")
    model_server.extend(
        [
            {
                "tool_calls": [
                    {
                        "name": "run_python",
                        "arguments": {"code": "answer = base + 2\nprint('computed')\nanswer"},
                    }
                ]
            },
            {"text": "The answer is 42.", "expect": {"tool_result_contains": "computed"}},
        ]
    )
    turn = kernel.execute("Compute base + 2 with Python", mode="headless")
    assert turn.status == "ok", turn.text()
    assert model_server.errors == []
    tool_result = _last_request(model_server)
    assert "42" in tool_result
    assert "approved" in turn.text() and "run_python" in turn.text()
    after = kernel.execute("%python answer")
    assert after.of_type("execute_result")[0]["content"]["data"]["text/plain"] == "42"


def test_denied_python_leaves_the_namespace_untouched(start_kernel, model_server):
    kernel = start_kernel({"CO_APPROVAL_MODE": "deny"})
    model_server.extend(
        [
            {"tool_calls": [{"name": "run_python", "arguments": {"code": "touched = True"}}]},
            {"text": "I could not run it.", "expect": {"tool_result_contains": "denied"}},
        ]
    )
    turn = kernel.execute("Set touched", mode="headless")
    assert turn.status == "ok"
    assert model_server.errors == []
    check = kernel.execute("%python 'touched' in globals()")
    assert check.of_type("execute_result")[0]["content"]["data"]["text/plain"] == "False"


def test_notebook_context_reports_the_last_traceback(kernel, model_server):
    kernel.execute("%%python\nimport json\njson.loads('{bad')")
    model_server.extend(
        [
            {"tool_calls": [{"name": "notebook_context", "arguments": {}}]},
            {
                "text": "The JSON was malformed.",
                "expect": {"tool_result_contains": "JSONDecodeError"},
            },
        ]
    )
    turn = kernel.execute("why did that fail?", mode="headless")
    assert turn.status == "ok"
    assert model_server.errors == []
    assert "json.loads('{bad')" in _last_request(model_server)


def test_inspect_and_list_variables(kernel, model_server):
    kernel.execute("%%python\nnumbers = list(range(100))\nlabel = 'sales'")
    model_server.extend(
        [
            {"tool_calls": [{"name": "list_variables", "arguments": {}}]},
            {
                "tool_calls": [{"name": "inspect_variable", "arguments": {"name": "numbers"}}],
                "expect": {"tool_result_contains": "`label`: str"},
            },
            {
                "tool_calls": [{"name": "inspect_variable", "arguments": {"name": "nope"}}],
                "expect": {"tool_result_contains": "len: 100"},
            },
            {"text": "Done.", "expect": {"messages_contain": ["No variable named 'nope'"]}},
        ]
    )
    assert kernel.execute("what is defined?", mode="headless").status == "ok"
    assert model_server.errors == []


def test_run_python_approved_through_the_widget_card(kernel, model_server):
    from tests.support.kernel_harness import WidgetClicker

    kernel.execute("%%python\nrows = [3, 1, 2]")
    model_server.extend(
        [
            {"tool_calls": [{"name": "run_python", "arguments": {"code": "rows.sort()\nrows"}}]},
            {"text": "Sorted.", "expect": {"tool_result_contains": "[1, 2, 3]"}},
        ]
    )
    clicker = WidgetClicker(["Approve"])
    turn = kernel.execute("sort my rows", on_message=clicker)
    assert turn.status == "ok"
    assert clicker.cards == 1 and [c for c, _ in clicker.clicked] == ["Approve"]
    assert model_server.errors == []
    card = json.dumps([m["content"] for m in turn.of_type("display_data", "update_display_data")])
    assert "Runs on the host" in card, "the approval card says where the code runs"
    after = kernel.execute("%python rows")
    assert after.of_type("execute_result")[0]["content"]["data"]["text/plain"] == "[1, 2, 3]"


def _printed(result_messages: list, needle: str) -> bool:
    return any(needle in m["content"].get("text", "") for m in list(result_messages))


def test_an_interrupt_stops_a_busy_python_cell(kernel):
    seen: list = []
    busy = kernel.execute(
        "%%python\nkept = 'yes'\nprint('looping', flush=True)\nwhile True:\n    pass",
        timeout=60,
        interrupt_when=lambda: _printed(seen, "looping"),
        on_message=lambda _k, m: seen.append(m),
    )
    assert busy.interrupt_sent
    assert busy.status == "error" and busy.reply["content"]["ename"] == "KeyboardInterrupt"
    [error] = busy.of_type("error")
    assert error["content"]["ename"] == "KeyboardInterrupt"
    after = kernel.execute("%python kept")
    assert after.of_type("execute_result")[0]["content"]["data"]["text/plain"] == "'yes'"


def test_an_interrupt_stops_the_models_busy_python_and_the_turn(
    start_kernel, model_server, workspace
):
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    model_server.extend(
        [
            {
                "tool_calls": [
                    {
                        "name": "run_python",
                        "arguments": {
                            "code": "open('spinning', 'w').close()\nwhile True:\n    pass"
                        },
                    }
                ]
            },
            {"text": "never asked for"},
        ]
    )
    turn = kernel.execute(
        "Spin forever",
        mode="headless",
        timeout=60,
        interrupt_when=lambda: (workspace / "spinning").exists(),
    )
    assert turn.interrupt_sent
    assert turn.status == "error" and turn.reply["content"]["ename"] == "KeyboardInterrupt"
    assert len(model_server.requests) == 1, "the turn stopped instead of asking the model again"
    model_server.reset([{"text": "Still here.", "expect": {"tool_result_contains": "Interrupted"}}])
    follow = kernel.execute("Are you there?")
    assert follow.status == "ok" and "Still here." in follow.markdown()
    assert model_server.errors == []
