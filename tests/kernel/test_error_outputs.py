"""Every cell that replies `error` ends with one `error` output: readable lines, no Python
stack, the text shown once, in each frontend's mode."""

from __future__ import annotations

import json

import pytest

from ..support.kernel_harness import CellResult, CoKernel

BAD_KEY = {"fault": {"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}}}


def _one_error(result: CellResult, ename: str) -> dict:
    assert result.status == "error"
    assert result.reply["content"]["ename"] == ename
    [error] = result.of_type("error")
    content = error["content"]
    assert content["ename"] == ename
    assert content["traceback"] and all(isinstance(line, str) for line in content["traceback"])
    assert not any("Traceback (most recent call last)" in line for line in content["traceback"])
    assert not any('File "' in line for line in content["traceback"]), "no Python stack"
    return content


def _shown_elsewhere(result: CellResult, text: str) -> int:
    """How many outputs other than the error output carry ``text``."""
    others = result.of_type("display_data", "update_display_data", "stream", "execute_result")
    return sum(text in json.dumps(m["content"]) for m in others)


@pytest.mark.parametrize("mode", ["notebook", "console", "headless"])
def test_a_failed_turn_is_an_error_output_shown_once(kernel: CoKernel, model_server, mode) -> None:
    model_server.extend([BAD_KEY])
    result = kernel.execute("hello", mode=mode)
    error = _one_error(result, "CoError")
    lines = "\n".join(error["traceback"])
    assert "HTTP 401" in lines and "Incorrect API key provided" in lines and "CO_API_KEY" in lines
    assert "Incorrect API key provided" in error["evalue"]
    assert _shown_elsewhere(result, "Incorrect API key provided") == 0
    assert kernel.execute("%help").status == "ok", "the kernel goes on"


def test_a_turn_refused_before_it_runs_is_an_error_output(kernel: CoKernel, model_server) -> None:
    result = kernel.execute("x" * 1_048_576, mode="headless")
    error = _one_error(result, "CoError")
    assert "max_prompt_chars" in "\n".join(error["traceback"])
    assert _shown_elsewhere(result, "max_prompt_chars") == 0
    assert model_server.requests == []


def test_no_model_is_an_error_output_naming_the_fix(start_kernel) -> None:
    kernel = start_kernel({"CO_LOCAL_DEFAULT": "false"}, model=False)
    error = _one_error(kernel.execute("hello", mode="headless"), "CoError")
    assert "No model is configured" in "\n".join(error["traceback"])


@pytest.mark.parametrize("mode", ["notebook", "console"])  # they stream the answer
def test_an_interrupted_turn_is_a_keyboard_interrupt_error(
    kernel: CoKernel, model_server, mode
) -> None:
    long_text = " ".join(f"word{i}" for i in range(2000))
    model_server.extend([{"text": long_text, "tokens_per_second": 40}])
    sent: list[bool] = []

    def interrupt_on_text(k: CoKernel, msg: dict) -> None:
        shows = msg["msg_type"] in ("display_data", "update_display_data", "stream")
        if not sent and shows and "word0" in json.dumps(msg["content"]):
            sent.append(True)
            k.km.interrupt_kernel()

    result = kernel.execute("Write a lot", mode=mode, on_message=interrupt_on_text, timeout=90)
    assert sent
    error = _one_error(result, "KeyboardInterrupt")
    assert error["traceback"][0].startswith("Interrupted.")
    assert _shown_elsewhere(result, "Interrupted.") == 0


def test_an_interrupted_magic_is_a_keyboard_interrupt_error(start_kernel, model_server) -> None:
    kernel = start_kernel({"CO_COMPACT_KEEP_TURNS": "1"})
    model_server.extend([{"text": "One."}, {"text": "Two."}])
    for prompt in ("first", "second"):
        assert kernel.execute(prompt).status == "ok"
    # %compact's summary request never finishes: the interrupt lands in the magic.
    model_server.extend([{"text": "never", "fault": {"kind": "stall", "seconds": 60}}])
    result = kernel.execute(
        "%compact", timeout=90, interrupt_when=lambda: len(model_server.requests) == 3
    )
    assert result.interrupt_sent
    error = _one_error(result, "KeyboardInterrupt")
    assert error["traceback"] == ["Interrupted."]
    assert kernel.execute("%help").status == "ok", "the kernel goes on"
