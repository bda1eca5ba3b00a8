"""Child process: llama.cpp's OpenAI-compatible server for one GGUF model, via xllamacpp.

Started by ``co_kernel.models._local_runtime.LlamaServerProcess`` as a script (it imports
nothing of Co, so it starts fast). Prints one JSON line on stdout once the model is loaded
or has failed to load, then serves on 127.0.0.1 until its stdin closes: the kernel closes it
when it stops, and the operating system does when the kernel dies. llama.cpp's log goes
to stderr, which the parent points at a file, so nothing reaches the notebook.

Argument: a JSON object with ``path``, ``context``, ``threads``, ``port`` and ``cache_mb``
(the prompt cache's cap).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any, Protocol, cast


class _ModelParams(Protocol):
    path: str


class _CpuParams(Protocol):
    n_threads: int


class _CommonParams(Protocol):
    model: _ModelParams
    n_ctx: int
    cpuparams: _CpuParams
    cpuparams_batch: _CpuParams
    hostnames: list[str]
    port: int
    n_parallel: int
    cache_ram_mib: int
    ui: bool
    verbosity: int


class _Server(Protocol):
    listening_address: str


class _XLlamaCpp(Protocol):
    """What this script uses of xllamacpp, a compiled module that ships no type stubs."""

    def CommonParams(self) -> _CommonParams: ...

    def Server(self, params: _CommonParams, /) -> _Server: ...


def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    # The kernel is interrupted with SIGINT, sent to its process group; a new session
    # already keeps this process out of it, and this keeps it out in any case.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    config = json.loads(sys.argv[1])
    started = time.monotonic()
    try:
        import xllamacpp  # pyright: ignore[reportMissingTypeStubs]: _XLlamaCpp declares it
    except ImportError as exc:
        _say({"error": "missing", "detail": str(exc)})
        return
    llama = cast("_XLlamaCpp", xllamacpp)
    params = llama.CommonParams()
    params.model.path = config["path"]
    params.n_ctx = int(config["context"])
    params.cpuparams.n_threads = int(config["threads"])
    params.cpuparams_batch.n_threads = int(config["threads"])
    params.hostnames = ["127.0.0.1"]
    params.port = int(config["port"])
    params.n_parallel = 1
    params.cache_ram_mib = int(config["cache_mb"])
    params.ui = False
    params.verbosity = 1  # errors only
    try:
        server = llama.Server(params)
    except Exception as exc:
        _say({"error": "load", "detail": str(exc)})
        return
    _say({"address": server.listening_address, "load_seconds": time.monotonic() - started})
    sys.stdin.buffer.read()
    # Skip the server's destructor: it waits for a request in flight to finish, and
    # nothing here needs to be saved.
    os._exit(0)


if __name__ == "__main__":
    main()
