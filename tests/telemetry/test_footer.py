"""The one-line footer after each turn, per frontend and per `show_footer`."""

from __future__ import annotations

import re
from decimal import Decimal

from co_kernel.frontend import footer_enabled, format_footer
from co_kernel.telemetry import CostSum
from co_kernel.turn import TurnSummary

USAGE = {"prompt_tokens": 1234, "completion_tokens": 56}
FOOTER = re.compile(
    r"^compat:scripted · 1,234 in / 56 out tokens · price unknown · 1 request · \d+\.\d s$",
    re.MULTILINE,
)


def _footers(result) -> list[str]:
    return [
        data["text/plain"]
        for data in result.final_displays().values()
        if "co-turn-footer" in data.get("text/html", "")
    ]


def test_notebook_turn_ends_with_the_footer(kernel, model_server):
    model_server.extend([{"text": "Forty-two.", "usage": USAGE}])
    result = kernel.execute("Answer?", mode="notebook")
    (footer,) = _footers(result)
    assert FOOTER.match(footer), footer
    assert result.markdown() == "Forty-two.", "the footer is not part of the answer"
    shown = list(result.final_displays().values())
    assert "co-turn-footer" in shown[-1].get("text/html", ""), "the footer comes last"


def test_console_footer_goes_to_stderr_and_stdout_stays_the_answer(kernel, model_server):
    model_server.extend([{"text": "Forty-two.", "usage": USAGE}])
    result = kernel.execute("Answer?", mode="console")
    assert result.stdout.strip() == "Forty-two."
    assert FOOTER.search(result.stderr.replace("── ", "")), result.stderr


def test_headless_runs_have_no_footer_unless_asked(start_kernel, model_server):
    model_server.extend([{"text": "Forty-two.", "usage": USAGE, "repeat": 2}])
    plain = start_kernel().execute("Answer?", mode="headless")
    assert _footers(plain) == []
    assert len(plain.of_type("display_data")) == 1, "nbval sees exactly the answer"
    always = start_kernel({"CO_SHOW_FOOTER": "always"}).execute("Answer?", mode="headless")
    (footer,) = _footers(always)
    assert FOOTER.match(footer)


def test_never_hides_the_footer_in_notebooks(start_kernel, model_server):
    model_server.extend([{"text": "Forty-two.", "usage": USAGE}])
    result = start_kernel({"CO_SHOW_FOOTER": "never"}).execute("Answer?", mode="notebook")
    assert _footers(result) == []
    assert result.markdown() == "Forty-two."


def test_footer_text_and_modes() -> None:
    summary = TurnSummary(
        model="gemini:gemini-2.5-flash",
        input_tokens=12_000,
        output_tokens=1,
        requests=2,
        duration=3.04,
        cost=CostSum.of(Decimal("0.0036")),
    )
    assert format_footer(summary) == (
        "gemini:gemini-2.5-flash · 12,000 in / 1 out tokens · $0.0036 · 2 requests · 3.0 s"
    )
    summary.interrupted = True
    assert format_footer(summary).endswith("· interrupted")
    summary.interrupted, summary.error = False, "boom"
    assert format_footer(summary).endswith("· stopped")
    assert [footer_enabled("auto", k) for k in ("notebook", "console", "headless")] == [
        True,
        True,
        False,
    ]
    assert footer_enabled("always", "headless") and not footer_enabled("never", "notebook")
