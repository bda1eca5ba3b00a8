"""Models and providers: the pydantic-ai model a turn talks to, and what wraps it.

``build_model`` turns ``provider:model`` into a model (``_providers``); a failed request
is classified for the turn's retries (``_provider_errors``) and an answer cut off without
a finish reason is refused (``_finish``). Beneath: the ``local`` runtime, a GGUF model
that llama.cpp serves on 127.0.0.1 (``_local_runtime``, ``_llama_child``, ``_llamacpp``),
tool calls a small model writes as text (``_textcalls``, ``_textcall_model``), recording
and replay of model exchanges (``_record_replay``), prompt caching, prices and stream coalescing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._provider_errors import ErrorAction, ProviderErrorKind, backoff_delay, classify_provider_error
from ._providers import ModelHandle, build_model, default_model_string

if TYPE_CHECKING:
    from ._finish import RequireFinish
    from ._local_runtime import CATALOGUE, human_size, local_status_rows, resolve_local_model

__all__ = [
    "CATALOGUE",
    "ErrorAction",
    "ModelHandle",
    "ProviderErrorKind",
    "RequireFinish",
    "backoff_delay",
    "build_model",
    "classify_provider_error",
    "default_model_string",
    "human_size",
    "local_status_rows",
    "resolve_local_model",
]

_LAZY = {
    "RequireFinish": "._finish",
    "CATALOGUE": "._local_runtime",
    "human_size": "._local_runtime",
    "local_status_rows": "._local_runtime",
    "resolve_local_model": "._local_runtime",
}


def __getattr__(name: str) -> Any:
    # The local runtime and the finish check load with the first local model or turn,
    # not with the package (kernel start imports it).
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)
