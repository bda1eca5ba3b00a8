"""llama.cpp's server through pydantic-ai's OpenAI chat model, keeping its timings.

llama.cpp adds ``timings`` (tokens and milliseconds of prompt and generation) to the last
chunk of a stream and to a whole response; pydantic-ai drops fields the Chat Completions
API does not define, so this subclass copies them into ``provider_details["timings"]``,
where `%status` reads the speed of the last turn. It also counts a request's prompt
tokens before sending it, with the server's own chat template and tokenizer.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

from openai.types import chat
from openai.types.chat import ChatCompletionChunk
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIStreamedResponse
from pydantic_ai.models.wrapper import WrapperModel

from ._prepared import CustomizesOnce

if TYPE_CHECKING:
    from pydantic import BaseModel, JsonValue
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.usage import RequestUsage

__all__ = ["LlamaCppChatModel", "LocalServerModel", "ModelRuntime", "timings_of"]


class ModelRuntime(Protocol):
    """What runs the model's server (``_local_runtime.LocalRuntime``): started before a request."""

    async def prepare(self) -> None: ...


_COUNT_TIMEOUT = 30.0
"""Seconds a count may take (templating and tokenizing only, but on a busy CPU)."""

_TIMING_KEYS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "predicted_per_second")


def timings_of(obj: BaseModel) -> dict[str, Any] | None:
    """The timing figures of a validated completion or chunk, or None."""
    timings: JsonValue = (obj.model_extra or {}).get("timings")
    if not isinstance(timings, dict):
        return None
    return {k: timings[k] for k in _TIMING_KEYS if k in timings}


class _LlamaCppStreamedResponse(OpenAIStreamedResponse):
    def _map_chunk_provider_details(self, chunk: ChatCompletionChunk) -> dict[str, Any] | None:
        timings = timings_of(chunk)
        return {"timings": timings} if timings else None


class LlamaCppChatModel(CustomizesOnce, OpenAIChatModel):
    """The OpenAI-compatible code path, plus llama.cpp's timings."""

    @property
    def _streamed_response_cls(self) -> type[OpenAIStreamedResponse]:
        return _LlamaCppStreamedResponse

    def _process_provider_details(self, response: chat.ChatCompletion) -> dict[str, Any] | None:
        details = super()._process_provider_details(response) or {}
        timings = timings_of(response)
        if timings:
            details["timings"] = timings
        return details or None

    async def count_tokens(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> RequestUsage:
        """The prompt tokens of a request as the server will see it: the messages mapped as
        a request maps them, put through the model's chat template (``/apply-template``),
        then its tokenizer (``/tokenize``), which is how llama.cpp builds the prompt.

        Tool definitions are left out (the template renders them only with ``--jinja``);
        the caller accounts for them. Raises ``httpx.HTTPError`` when the server does not
        answer, ``ValueError`` when it answers something else.
        """
        import httpx
        from pydantic_ai.usage import RequestUsage

        model_settings, model_request_parameters = self.prepare_request(
            model_settings, model_request_parameters
        )
        mapped = await self._map_messages(
            messages, model_request_parameters, model_settings=model_settings
        )
        server = str(self.client.base_url).rstrip("/").removesuffix("/v1")
        async with httpx.AsyncClient(base_url=server, timeout=_COUNT_TIMEOUT) as client:
            templated = await client.post("/apply-template", json={"messages": mapped})
            templated.raise_for_status()
            prompt = templated.json().get("prompt")
            if not isinstance(prompt, str):
                raise ValueError(
                    f"/apply-template answered without a prompt: {templated.text[:200]}"
                )
            # As the server tokenizes a chat prompt: special tokens added and parsed.
            tokenized = await client.post(
                "/tokenize", json={"content": prompt, "add_special": True}
            )
            tokenized.raise_for_status()
            tokens: JsonValue = tokenized.json().get("tokens")
            if not isinstance(tokens, list):
                raise ValueError(f"/tokenize answered without tokens: {tokenized.text[:200]}")
        return RequestUsage(input_tokens=len(tokens))


class LocalServerModel(WrapperModel):
    """Makes sure the local server runs before each request.

    A turn starts it first, with a progress line; this covers every other caller of the
    model (the evals runner, a server that died between turns).
    """

    def __init__(self, wrapped: Model, runtime: ModelRuntime) -> None:
        super().__init__(wrapped)
        self.runtime = runtime

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        await self.runtime.prepare()
        return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        await self.runtime.prepare()
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
