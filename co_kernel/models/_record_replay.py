"""Record and replay at the model boundary, whatever the provider.

``RecordingModel`` wraps the model a session (or a subagent, or a compaction) talks to and
hands each completed request with its answer to the session's ``Recorder``: streamed or
not, a failed request or one whose answer was cut off (retried by the turn) is no step.

``ReplayModel`` wraps the model that talks to the scripted server of ``replay:PATH``. A
request that does not match the script fails the turn with ``ReplayMismatch``, which names
the step, the recorded and the actual text; with ``replay_mode = record-missing`` the
request goes to ``replay_fallback_model`` instead, and its answer becomes a step of the
script in the missed one's place, written back to the file at once.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError
from pydantic_ai.models.wrapper import WrapperModel

from ..exceptions import ConfigError, RunError
from ._finish import finished

if TYPE_CHECKING:
    from pydantic import JsonValue
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
    from pydantic_ai.settings import ModelSettings

    from ..replay import Recorder, ScriptedModelServer

__all__ = ["RecordingModel", "ReplayMismatch", "ReplayModel"]

_SCRIPT_REFUSALS = ("script_mismatch", "script_exhausted")
"""Error types the scripted server answers with when it has no step for a request."""


class RecordingModel(WrapperModel):
    """A model whose completed exchanges go to a ``Recorder`` (which may not be recording)."""

    def __init__(self, wrapped: Model, recorder: Recorder) -> None:
        super().__init__(wrapped)
        self.recorder = recorder

    def _record(self, messages: list[ModelMessage], response: ModelResponse) -> None:
        if self.recorder.path is not None and finished(response):
            self.recorder.record(messages, response)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        self._record(messages, response)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
        # Only reached when the stream was read to its end without an error.
        self._record(messages, stream.get())


class ReplayMismatch(ModelAPIError, RunError):
    """A request the replay script has no step for (edited prompt, other tool result)."""


class ReplayModel(WrapperModel):
    """The model of ``replay:PATH``: the scripted server's answers, or the fallback's."""

    def __init__(
        self,
        wrapped: Model,
        server: ScriptedModelServer,
        path: Path,
        *,
        recorder: Recorder | None,
        fallback: Callable[[], tuple[Model, Callable[[], None]]] | None,
    ) -> None:
        super().__init__(wrapped)
        self.server = server
        self.path = path
        self.recorder = recorder
        self._fallback = fallback
        """Builds the model a record-missing replay asks, with what stops it; None in a
        strict replay."""
        self._fallback_model: Model | None = None
        self._close_fallback: Callable[[], None] = lambda: None
        self._saved = server.revision

    def _missed(self, exc: ModelHTTPError) -> Model:
        """The model to ask instead of the script, or ``ReplayMismatch`` with what differs."""
        # The OpenAI SDK decodes an error body from JSON (or keeps its text); pydantic-ai
        # passes it on typed as `object`.
        body = cast("JsonValue", exc.body)
        error = body.get("error", body) if isinstance(body, dict) else None
        kind = error.get("type") if isinstance(error, dict) else None
        if kind not in _SCRIPT_REFUSALS:
            raise exc
        detail = str(error.get("message", "")) if isinstance(error, dict) else ""
        what = (
            f"The replay script {self.path} does not match this request at {detail}"
            if kind == "script_mismatch"
            else f"The replay script {self.path} has no step for this request ({detail})"
        )
        if self._fallback is None:
            raise ReplayMismatch(
                self.model_name,
                f"{what}. The notebook changed since it was recorded: record it again, or set "
                "`replay_mode` to `record-missing` (with `replay_fallback_model`) to record "
                "only what changed",
            ) from None
        if self._fallback_model is None:
            try:
                self._fallback_model, self._close_fallback = self._fallback()
            except ConfigError as problem:
                raise ReplayMismatch(self.model_name, f"{what}. {problem}") from None
        return self._fallback_model

    def _answered_by_fallback(self, messages: list[ModelMessage], response: ModelResponse) -> None:
        from ..replay import Step, step_from_exchange

        redact = self.recorder.redact if self.recorder is not None else str
        self.server.insert(Step.model_validate(step_from_exchange(messages, response, redact)))

    def _save(self) -> None:
        """Write the script back when a record-missing replay changed it (atomically)."""
        revision = self.server.revision
        if revision == self._saved:
            return
        lines = [step.model_dump_json(exclude_defaults=True) + "\n" for step in self.server.steps]
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.writelines(lines)
        os.replace(temporary, self.path)
        self._saved = revision

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        try:
            response = await self.wrapped.request(
                messages, model_settings, model_request_parameters
            )
        except ModelHTTPError as exc:
            model = self._missed(exc)
            async with model:  # its HTTP client is closed again after each request
                response = await model.request(messages, model_settings, model_request_parameters)
            self._answered_by_fallback(messages, response)
        self._save()
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        args = (messages, model_settings, model_request_parameters, run_context)
        async with AsyncExitStack() as stack:
            fallback = False
            try:
                stream = await stack.enter_async_context(self.wrapped.request_stream(*args))
            except ModelHTTPError as exc:
                model = self._missed(exc)
                # Entered per request: its HTTP client is closed with the stream.
                await stack.enter_async_context(model)
                stream = await stack.enter_async_context(model.request_stream(*args))
                fallback = True
            yield stream
        if fallback and finished(stream.get()):
            self._answered_by_fallback(messages, stream.get())
        self._save()

    def close(self) -> None:
        """Stop the scripted server and the fallback model; a record-missing replay first
        drops the old answers of edited prompts from the script."""
        if self._fallback is not None:
            self.server.drop_superseded()
            self._save()
        self.server.stop()
        self._close_fallback()
        if self.recorder is not None and self.recorder.replaying is self:
            self.recorder.replaying = None
