"""`%compact` and automatic compaction in a real kernel, with the summary scripted."""

from __future__ import annotations

import json
from collections.abc import Callable

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CoKernel

SUMMARY = "- The person asked about alpha and beta; both were answered."


def _three_turns(kernel: CoKernel, server: ScriptedModelServer) -> None:
    server.extend(
        [
            {"text": "Alpha answer: 41."},
            {"text": "Beta answer: 42."},
            {"text": "Gamma answer: 43."},
        ]
    )
    for word in ("alpha", "beta", "gamma"):
        assert kernel.execute(f"Tell me about {word}").status == "ok"


def test_compact_summarises_older_turns_and_keeps_the_last_verbatim(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer
) -> None:
    kernel = start_kernel(
        {"CO_COMPACT_KEEP_TURNS": "1", "CO_SUMMARIZATION_MODEL": "compat:summariser"}
    )
    _three_turns(kernel, model_server)
    model_server.extend(
        [
            {
                "expect": {
                    "system_contains": "faithful, compact summaries",
                    "messages_contain": [
                        "[person] Tell me about alpha",
                        "[Co] Beta answer: 42.",
                        "Give most room to: the numbers",
                    ],
                    "tools_exclude": ["final_result"],
                },
                "text": SUMMARY,
                "usage": {"prompt_tokens": 500, "completion_tokens": 50},
            }
        ]
    )
    result = kernel.execute("%compact the numbers")
    assert result.status == "ok", result.stderr
    shown = result.markdown()
    assert shown.startswith("Compacted 2 turn(s) into a summary and kept the last 1 as they were")
    assert f"> {SUMMARY}" in shown
    assert model_server.requests[-1]["model"] == "summariser", "summarization_model is used"
    summary_request = json.dumps(model_server.requests[-1]["messages"])
    assert "gamma" not in summary_request, "the kept turn is not summarised"

    model_server.extend(
        [
            {
                "expect": {
                    "messages_contain": [SUMMARY, "Tell me about gamma", "Gamma answer: 43."]
                },
                "text": "Delta answer.",
            }
        ]
    )
    assert kernel.execute("And delta?").status == "ok"
    assert model_server.requests[-1]["model"] == "scripted"
    sent = json.dumps(model_server.requests[-1]["messages"])
    assert "Tell me about alpha" not in sent and "Tell me about beta" not in sent
    assert model_server.errors == []

    history = kernel.execute("%history").markdown()
    assert "| turns | 2 after a summary of 2 earlier turn(s) |" in history
    usage = kernel.execute("%usage").markdown()
    assert "| | *compaction summaries* | | 1 | 500 | 50 |" in usage.replace("|  |", "| |")
    assert "| 1 | Tell me about alpha |" in usage, "usage of compacted turns is kept"


def test_compact_refuses_when_there_is_nothing_to_fold(
    kernel: CoKernel, model_server: ScriptedModelServer
) -> None:
    model_server.extend([{"text": "Only answer."}])
    assert kernel.execute("Only question").status == "ok"
    result = kernel.execute("%compact")
    assert result.status == "error"
    line = result.stderr.strip()
    assert "Could not compact: there is nothing to compact yet" in line
    assert "the last 2 always stay as they are" in line
    assert "Usage: %compact [focus]" in line


def test_a_failed_summary_leaves_the_conversation_unchanged(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer
) -> None:
    kernel = start_kernel({"CO_COMPACT_KEEP_TURNS": "1"})
    _three_turns(kernel, model_server)
    model_server.extend([{"fault": {"status": 401, "body": {"error": {"message": "bad key"}}}}])
    result = kernel.execute("%compact")
    assert result.status == "error"
    assert "Could not compact: the summary request failed" in result.stderr
    assert "The conversation is unchanged." in result.stderr
    model_server.extend(
        [
            {
                "expect": {"messages_contain": ["Tell me about alpha", "Tell me about gamma"]},
                "text": "Ok.",
            }
        ]
    )
    assert kernel.execute("Still there?").status == "ok"
    assert model_server.errors == []


def test_auto_compaction_runs_before_a_turn_that_would_pass_the_window_and_says_so(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer
) -> None:
    # Window 2048 tokens, compact past half: the instructions and two short turns fit,
    # a 4,400-character prompt (~1,100 tokens) does not.
    kernel = start_kernel(
        {
            "CO_CONTEXT_WINDOW_TOKENS": "2048",
            "CO_AUTO_COMPACT_RATIO": "0.5",
            "CO_COMPACT_KEEP_TURNS": "1",
        }
    )
    model_server.extend([{"text": "One."}, {"text": "Two."}])
    assert kernel.execute("First short question").status == "ok"
    assert kernel.execute("Second short question").status == "ok"
    big = "Please review this text: " + "lorem ipsum " * 365
    model_server.extend(
        [
            {
                "expect": {"messages_contain": ["[person] First short question"]},
                "text": "- Two short questions were asked.",
            },
            {
                "expect": {
                    "messages_contain": ["Two short questions were asked", "Second short question"]
                },
                "text": "Reviewed.",
            },
        ]
    )
    result = kernel.execute(big)
    assert result.status == "ok", result.text()
    shown = result.markdown()
    assert "Co compacted the conversation" in shown
    assert "past 50% of the 2,048-token context window" in shown
    assert "1 earlier turn(s) are now a summary" in shown
    assert shown.rstrip().endswith("Reviewed.")
    sent = json.dumps(model_server.requests[-1]["messages"])
    assert "First short question" not in sent
    assert model_server.errors == []
