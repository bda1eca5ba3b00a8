"""Tokens/s of the bundled local model through Co beside calling its server directly.

One Co kernel (notebook mode, no model configured, so SmolLM2-135M-Instruct through the
``local`` provider) and, in the same run, the very server it started (``local_port``
fixes the port), called directly with the same messages (Co's compact system prompt and
the same user prompt) and the same ``max_tokens``. Trials alternate. Both sides are
measured the same way, at the client: tokens of the text that arrived (counted by the
server's own ``/tokenize``) over the time from the first piece of text to the last (Co:
``display_data``/``update_display_data`` carrying the answer; direct: SSE chunks with
content). The warm-up turn that loads the model is cleared (`%clear`), and every Co
trial re-runs the same cell, so Co regenerates one turn and the
prompt stays the same.

Beside each client-side rate, the server's own: ``/slots`` is sampled 20 times a second
during every answer, and the slope of its decoded-token count says how fast llama.cpp
generated. When Co's client rate is lower, this tells whether Co delivered tokens late
(server rate unchanged) or the machine gave llama.cpp less CPU while Co ran (both lower).

Also: an interrupt sent after the third update, to the execute_reply and to the moment
llama.cpp's ``/slots`` shows the slot idle (generation really stopped).

The verdict takes the median of the per-trial ratios (each trial runs both sides back
to back), which a busy 2-core machine's drift affects far less than the two medians.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_local.py [--trials 7] [--max-tokens 200]
"""

from __future__ import annotations

import argparse
import json
import socket
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx
from _common import kernel_env, median, ms, print_table, verdict

from co_kernel.config import paths
from co_kernel.turn._prompt import build_system_prompt
from tests.support.kernel_harness import CoKernel

PROMPT = "Write a long story about a lighthouse keeper and a storm."
ANSWER_MIME = "text/html"  # Co renders Markdown itself


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def count_tokens(base: str, text: str) -> int:
    body = json.dumps({"content": text}).encode()
    request = urllib.request.Request(
        f"{base}/tokenize", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        return len(json.loads(resp.read())["tokens"])


class DecodeRate:
    """Samples llama.cpp's ``/slots`` while it generates; the slope is its tokens/s."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.samples: list[tuple[float, int, int]] = []
        self.prompt_tokens = 0
        """The prompt size of the request the server worked on (both sides must match)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DecodeRate:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            with urllib.request.urlopen(f"{self.base}/slots", timeout=10) as resp:
                slot = json.loads(resp.read())[0]
            if slot["is_processing"]:
                decoded = slot["next_token"][0]["n_decoded"]
                # While it decodes, llama.cpp counts the tokens it generated in the prompt.
                self.prompt_tokens = slot.get("n_prompt_tokens", 0) - decoded
                self.samples.append((time.perf_counter(), slot["id_task"], decoded))

    def rate(self) -> float:
        task = max(t for _, t, _ in self.samples)
        points = [(when, n) for when, t, n in self.samples if t == task and n > 0]
        (t0, n0), (t1, n1) = points[0], points[-1]
        return (n1 - n0) / (t1 - t0)


def co_trial(kernel: CoKernel, cell_id: str, base: str) -> tuple[float, int]:
    """(tokens/s, tokens) of one answer as the notebook client receives it."""
    arrivals: list[float] = []

    def on_message(_: CoKernel, message: dict[str, Any]) -> None:
        carrier = message["msg_type"] in ("display_data", "update_display_data")
        if carrier and ANSWER_MIME in message["content"]["data"]:
            arrivals.append(time.perf_counter())

    result = kernel.execute(PROMPT, cell_id=cell_id, timeout=600, on_message=on_message)
    if result.status != "ok":
        raise RuntimeError(f"Co turn failed: {result.text()[:300]}")
    text = result.markdown()
    tokens = count_tokens(base, text)
    span = arrivals[-1] - arrivals[0]
    return (tokens - 1) / span, tokens


def direct_trial(base: str, system: str, max_tokens: int) -> tuple[float, int, float]:
    """(tokens/s at the client, tokens, llama.cpp's own predicted_per_second)."""
    body = {
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    arrivals: list[float] = []
    pieces: list[str] = []
    server_rate = float("nan")
    with (
        httpx.Client(timeout=600) as client,
        client.stream("POST", f"{base}/v1/chat/completions", json=body) as resp,
    ):
        for line in resp.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if "timings" in chunk:
                server_rate = chunk["timings"]["predicted_per_second"]
            for choice in chunk.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    pieces.append(content)
                    arrivals.append(time.perf_counter())
    tokens = count_tokens(base, "".join(pieces))
    return (tokens - 1) / (arrivals[-1] - arrivals[0]), tokens, server_rate


def interrupt_trial(kernel: CoKernel, base: str) -> tuple[float, float]:
    """Seconds from the interrupt to the execute_reply, and to an idle slot on the server."""
    sent: list[float] = []
    updates = 0

    def on_message(k: CoKernel, message: dict[str, Any]) -> None:
        nonlocal updates
        if message["msg_type"] == "update_display_data":
            updates += 1
            if updates == 3:
                sent.append(time.perf_counter())
                k.km.interrupt_kernel()

    result = kernel.execute(PROMPT + " Make it very long.", timeout=600, on_message=on_message)
    replied = time.perf_counter()
    while True:
        with urllib.request.urlopen(f"{base}/slots", timeout=10) as resp:
            if not json.loads(resp.read())[0]["is_processing"]:
                break
        time.sleep(0.01)
    idle = time.perf_counter()
    if result.reply["content"].get("ename") != "KeyboardInterrupt":
        raise RuntimeError("the interrupt did not stop the turn")
    return replied - sent[0], idle - sent[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=7, help="answers on each side")
    parser.add_argument("--max-tokens", type=int, default=200, help="generation cap")
    parser.add_argument("--interrupts", type=int, default=3, help="interrupt trials")
    args = parser.parse_args()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    co_rates: list[float] = []
    direct_rates: list[float] = []
    server_rates: list[float] = []
    co_server: list[float] = []
    direct_server: list[float] = []
    co_tokens: list[int] = []
    direct_tokens: list[int] = []
    to_reply: list[float] = []
    to_idle: list[float] = []
    with tempfile.TemporaryDirectory(prefix="co-bench-") as tmp:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        home.mkdir()
        work.mkdir()
        env = kernel_env(home, "http://127.0.0.1:9/v1")
        for name in ("CO_MODEL", "CO_BASE_URL"):  # nothing configured: the bundled model
            env.pop(name)
        env.update(
            {
                "CO_SANDBOX": "subprocess",
                "CO_LOCAL_PORT": str(port),
                "CO_LOCAL_MAX_TOKENS": str(args.max_tokens),
            }
        )
        kernel = CoKernel(env, work)
        try:
            warm = kernel.execute("Say OK.", timeout=600)  # loads the model (untimed)
            if warm.status != "ok":
                raise RuntimeError(f"the local model did not load: {warm.text()[:300]}")
            # The warm-up turn leaves the conversation: the timed requests must be the
            # same on both sides (a longer prompt alone decodes ~14% slower at 300 tokens).
            if kernel.execute("%clear").status != "ok":
                raise RuntimeError("%clear failed")
            system = build_system_prompt(
                personality="friendly",
                project_dir=work,
                config_dir=paths().config_dir,
                compact=True,
            )
            cell_id = "bench-cell"
            prompts: dict[str, list[int]] = {"co": [], "direct": []}
            for n in range(args.trials):
                order = ("co", "direct") if n % 2 == 0 else ("direct", "co")
                for side in order:
                    with DecodeRate(base) as decode:
                        if side == "co":
                            rate, tokens = co_trial(kernel, cell_id, base)
                        else:
                            rate, tokens, server = direct_trial(base, system, args.max_tokens)
                    prompts[side].append(decode.prompt_tokens)
                    if side == "co":
                        co_rates.append(rate)
                        co_tokens.append(tokens)
                        co_server.append(decode.rate())
                    else:
                        direct_rates.append(rate)
                        direct_tokens.append(tokens)
                        server_rates.append(server)
                        direct_server.append(decode.rate())
            for _ in range(args.interrupts):
                reply, idle = interrupt_trial(kernel, base)
                to_reply.append(reply)
                to_idle.append(idle)
        finally:
            kernel.shutdown()

    co, direct = median(co_rates), median(direct_rates)
    # Each trial's two answers ran back to back: their ratio cancels the machine's drift.
    paired = median([c / d for c, d in zip(co_rates, direct_rates, strict=True)])
    print_table(
        f"Local model tokens/s at the client ({args.trials} alternating answers each, "
        f"max_tokens {args.max_tokens})",
        [
            "target",
            "Co median",
            "direct median",
            "ratio",
            "paired ratio",
            "Co min..max",
            "direct min..max",
            "verdict",
        ],
        [
            [
                ">= 0.95x",
                f"{co:.1f}/s",
                f"{direct:.1f}/s",
                f"{co / direct:.3f}x",
                f"{paired:.3f}x",
                f"{min(co_rates):.1f}..{max(co_rates):.1f}",
                f"{min(direct_rates):.1f}..{max(direct_rates):.1f}",
                verdict(paired >= 0.95),
            ]
        ],
    )
    print("Co samples (tokens/s):", " ".join(f"{r:.1f}" for r in co_rates))
    print("direct samples (tokens/s):", " ".join(f"{r:.1f}" for r in direct_rates))
    print(f"Co tokens per answer: {co_tokens}; direct: {direct_tokens}")
    print(
        f"prompt tokens per request (llama.cpp's /slots): Co {sorted(set(prompts['co']))}, "
        f"direct {sorted(set(prompts['direct']))}"
    )
    print(
        f"llama.cpp's decode rate from /slots, median: during Co's answers "
        f"{median(co_server):.1f}/s, during the direct calls {median(direct_server):.1f}/s "
        f"(its own predicted_per_second on the direct calls: {median(server_rates):.1f}/s)"
    )
    if to_reply:
        print_table(
            f"Interrupt after the third update ({len(to_reply)} trials)",
            ["target", "to execute_reply (median)", "to idle slot (median)", "max", "verdict"],
            [
                [
                    "< 1 s",
                    ms(median(to_reply)),
                    ms(median(to_idle)),
                    ms(max(to_idle)),
                    verdict(max(to_idle) < 1.0),
                ]
            ],
        )


if __name__ == "__main__":
    main()
