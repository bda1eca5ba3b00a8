"""With no model configured, Co uses a chat model of an Ollama server at OLLAMA_HOST.

The server here answers Ollama's documented endpoints on 127.0.0.1: ``GET /api/tags``,
``POST /api/show`` (with ``capabilities``) and the OpenAI-compatible
``POST /v1/chat/completions`` that Co's ``ollama`` provider talks to.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from co_kernel.config import Settings
from co_kernel.models._providers import default_model_string, ollama_chat_model

from ..support.kernel_harness import CoKernel
from ..support.net import free_port
from ..tools._http import JSONHandler

ANSWER = "Paris is the capital of France."


class FakeOllama(ThreadingHTTPServer):
    def __init__(self, models: dict[str, list[str] | None]) -> None:
        """``models``: name -> capabilities (None: a server too old to report them)."""
        super().__init__(("127.0.0.1", 0), _Handler)
        self.models = models
        self.chats: list[dict[str, Any]] = []

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(JSONHandler):
    server: FakeOllama

    def do_GET(self) -> None:
        if self.path == "/api/tags":
            self._json({"models": [{"name": n, "model": n} for n in self.server.models]})
        else:
            self._json({"error": "not found"}, 404)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/api/show":
            if body.get("model") not in self.server.models:
                self._json({"error": "model not found"}, 404)
                return
            capabilities = self.server.models[body["model"]]
            shown: dict[str, Any] = {"details": {"family": "llama"}}
            if capabilities is not None:
                shown["capabilities"] = capabilities
            self._json(shown)
        elif self.path == "/v1/chat/completions":
            self.server.chats.append(body)
            self._stream(body["model"])
        else:
            self._json({"error": "not found"}, 404)

    def _stream(self, model: str) -> None:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            payload = {"id": "c1", "object": "chat.completion.chunk", "created": 1,
                       "model": model, "choices": [choice]}  # fmt: skip
            return f"data: {json.dumps(payload)}\n\n".encode()

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(chunk({"role": "assistant", "content": ""}))
        for word in ANSWER.split(" "):
            self.wfile.write(chunk({"content": word + " "}))
        self.wfile.write(chunk({}, "stop"))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


@pytest.fixture
def ollama() -> Iterator[Callable[[dict[str, list[str] | None]], FakeOllama]]:
    servers: list[FakeOllama] = []

    def start(models: dict[str, list[str] | None]) -> FakeOllama:
        server = FakeOllama(models)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def test_no_server_means_no_ollama_model() -> None:
    assert ollama_chat_model(_closed_port_url()) is None


def test_a_server_that_never_answers_is_given_up_on() -> None:
    with socket.socket() as listener:  # accepts connections, never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert ollama_chat_model(f"http://127.0.0.1:{listener.getsockname()[1]}") is None


def test_an_embedding_only_server_is_not_used(ollama) -> None:
    server = ollama({"nomic-embed-text:latest": ["embedding"]})
    assert ollama_chat_model(server.host) is None
    settings = Settings(ollama_host=server.host, local_default=False)
    assert default_model_string(settings) is None


def test_the_first_chat_model_is_chosen_over_embedding_ones(ollama) -> None:
    server = ollama(
        {
            "all-minilm:latest": ["embedding"],
            "qwen2.5:0.5b": ["completion", "tools"],
            "llama3.2:latest": ["completion"],
        }
    )
    assert default_model_string(Settings(ollama_host=server.host)) == "ollama:qwen2.5:0.5b"


def test_a_server_without_capabilities_skips_models_named_embed(ollama) -> None:
    server = ollama({"mxbai-embed-large:latest": None, "phi3:mini": None})
    assert ollama_chat_model(server.host) == "phi3:mini"


def test_a_kernel_without_a_model_answers_with_ollama_and_says_so(
    ollama, start_kernel: Callable[..., CoKernel], tmp_path: Path
) -> None:
    server = ollama({"nomic-embed-text:latest": ["embedding"], "llama3.2:latest": ["completion"]})
    # A loaded test machine can be slower to answer than the 0.5 s a real server needs.
    kernel = start_kernel({"OLLAMA_HOST": server.host, "CO_OLLAMA_TIMEOUT": "30"}, model=False)
    result = kernel.execute("What is the capital of France?")
    assert result.status == "ok", result.text()
    text = result.text()
    assert "Ollama server answers at" in text and server.host in text
    assert "ollama:llama3.2:latest" in text
    assert ANSWER in result.markdown()
    assert [chat["model"] for chat in server.chats] == ["llama3.2:latest"]
    status = kernel.execute("%status").text()
    assert "ollama:llama3.2:latest" in status and "found at OLLAMA_HOST" in status
