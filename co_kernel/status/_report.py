"""One status report for `%status` and `co-kernel status`, and the provider probe `%model` uses.

Everything here is cheap and side-effect free: no container is started, no model request
is made; a provider is asked only for its model list (``GET {base}/models``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import (
    SECRET_FIELDS,
    FolderTrust,
    LoadedSettings,
    Settings,
    load_settings,
    paths,
)
from ..inert import inert_text

if TYPE_CHECKING:
    from ..turn import SessionProtocol

__all__ = [
    "ProviderProbe",
    "StatusReport",
    "brief_status",
    "collect_status",
    "format_status",
    "probe_provider",
]

_KEY_FIELDS = {
    "gemini": ("gemini_api_key", "GEMINI_API_KEY"),
    "openai": ("openai_api_key", "OPENAI_API_KEY"),
    "anthropic": ("anthropic_api_key", "ANTHROPIC_API_KEY"),
}


@dataclass
class StatusReport:
    """What is configured and what answers."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)
    """(area, item, value) rows."""
    problems: list[str] = field(default_factory=list)
    """Settings problems, one per line."""

    def add(self, area: str, item: str, value: str) -> None:
        self.rows.append((area, item, value))


@dataclass
class ProviderProbe:
    """Whether a provider can serve a model, and the fix when it cannot."""

    ok: bool
    """The model can be used as far as Co can tell without a model request."""
    detail: str
    """One readable sentence: how it answered, or what to do."""
    models: list[str] = field(default_factory=list)
    """Model ids the provider listed, when it lists them."""
    base_url: str | None = None
    """Where the provider was asked."""


def _get_models(base_url: str, api_key: str | None, timeout: float) -> tuple[int, list[str]]:
    """GET {base_url}/models -> (HTTP status, model ids); raises URLError/OSError."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(base_url.rstrip("/") + "/models")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            body = resp.read(1_000_000)
            status = resp.status
    except urllib.error.HTTPError as exc:
        return exc.code, []
    try:
        data = json.loads(body)
    except ValueError:
        return status, []
    items = data.get("data", []) if isinstance(data, dict) else []
    ids = [str(m["id"]) for m in items if isinstance(m, dict) and "id" in m]
    return status, ids


def _secret(value: Any) -> str | None:
    return value.get_secret_value() if value is not None else None


def _base_for(
    settings: Settings, provider: str, replay_base: str | None
) -> tuple[str | None, str | None]:
    """(base URL to list models at, key to send) for a provider; (None, None) if hosted."""
    if provider == "ollama":
        return settings.ollama_host.rstrip("/") + "/v1", None
    if provider == "compat":
        return settings.base_url, _secret(settings.api_key)
    if provider == "openai" and settings.base_url:
        return settings.base_url, _secret(settings.openai_api_key)
    if provider == "replay":
        return replay_base, None
    return None, None


def _name_listed(provider: str, name: str, models: list[str]) -> bool:
    if name in models:
        return True
    # Ollama lists "llama3.2:latest" for what people call "llama3.2".
    return provider == "ollama" and f"{name}:latest" in models


def probe_provider(
    settings: Settings,
    model: str,
    *,
    base_dir: Path,
    replay_base: str | None = None,
    timeout: float = 3.0,
) -> ProviderProbe:
    """Check that ``provider:model`` can be used: key present, server answering, model listed.

    Raises UnknownProvider (a ConfigError) for a malformed name.
    """
    from ..config import parse_model_string

    provider, name = parse_model_string(model)
    if provider in _KEY_FIELDS:
        field_name, variable = _KEY_FIELDS[provider]
        if getattr(settings, field_name) is None:
            return ProviderProbe(
                False,
                f"The {provider} provider needs an API key: set `{variable}` in the kernel's "
                f"environment or `{field_name}` in settings.json, then restart the kernel.",
            )
    if provider == "compat" and not settings.base_url:
        return ProviderProbe(
            False,
            "The compat provider needs `CO_BASE_URL` (or `base_url` in settings.json), the "
            "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.",
        )
    if provider == "replay":
        return _probe_replay(name, base_dir, replay_base, timeout)
    if provider == "local":
        return _probe_local(name, base_dir)
    base, key = _base_for(settings, provider, replay_base)
    if base is None:
        return ProviderProbe(True, "API key set; hosted API not contacted")
    return _probe_listing(provider, name, base, key, timeout)


def _probe_local(name: str, base_dir: Path) -> ProviderProbe:
    """The file exists and is a GGUF; loading it is left to the first turn (seconds)."""
    from ..exceptions import ConfigError
    from ..models import human_size, resolve_local_model

    try:
        spec = resolve_local_model(name, base_dir=base_dir)
    except ConfigError as exc:
        return ProviderProbe(False, str(exc))
    tools = "" if spec.supports_tools else "; it has no tool support"
    return ProviderProbe(
        True,
        f"{spec.label} ({human_size(spec.size)} GGUF) runs on this machine; it loads on the "
        f"next turn{tools}",
    )


def _probe_replay(
    name: str, base_dir: Path, replay_base: str | None, timeout: float
) -> ProviderProbe:
    from ..replay import Script

    path = Path(name).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        return ProviderProbe(False, f"Replay script not found: {path}")
    try:
        steps = len(Script.from_file(path))
    except ValueError as exc:
        return ProviderProbe(False, f"Replay script {path} is invalid: {exc}")
    played = f"replay script with {steps} step(s)"
    if replay_base:
        # Co's own replay server plays the script under one model name of its own: that
        # its list lacks the file's name is how it works, not a fault worth reporting.
        served = _probe_listing("replay", name, replay_base, None, timeout)
        if not served.ok:
            return served
        return ProviderProbe(True, f"{played}, played at {replay_base}", base_url=replay_base)
    return ProviderProbe(True, played)


def _probe_listing(
    provider: str, name: str, base: str, key: str | None, timeout: float
) -> ProviderProbe:
    started = time.monotonic()
    try:
        status, models = _get_models(base, key, timeout)
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        fix = (
            " Start it with `ollama serve` or point `OLLAMA_HOST` at it."
            if provider == "ollama"
            else " Check that the server runs and `CO_BASE_URL` points at it."
        )
        return ProviderProbe(False, f"{base} is unreachable ({reason}).{fix}", base_url=base)
    took = (time.monotonic() - started) * 1000
    if status in (401, 403):
        return ProviderProbe(
            False, f"{base} refused the API key (HTTP {status}): check it.", base_url=base
        )
    if status >= 400:
        # Some OpenAI-compatible servers have no model list; they may still serve the model.
        return ProviderProbe(True, f"{base} answers (HTTP {status} for /models)", base_url=base)
    detail = f"{base} answers ({took:.0f} ms)"
    if models and not _name_listed(provider, name, models):
        import difflib

        close = difflib.get_close_matches(name, models, n=1)
        hint = f" Did you mean `{provider}:{close[0]}`?" if close else ""
        shown = ", ".join(models[:8]) + (" …" if len(models) > 8 else "")
        if provider == "ollama":
            return ProviderProbe(
                False,
                f"Ollama has no model `{name}`.{hint} Pull it with `ollama pull {name}`; it has: "
                f"{shown}.",
                models,
                base,
            )
        detail += f"; it does not list `{name}` (it lists {shown}){hint}"
    return ProviderProbe(True, detail, models, base)


def _secret_rows(report: StatusReport, loaded: LoadedSettings) -> None:
    """Where each secret setting comes from, never its value."""
    from ..config import CredentialStore

    settings = loaded.settings
    store = CredentialStore(settings.credential_store)
    stored = list(store.names().values())
    counts = ", ".join(f"{b} {stored.count(b)}" for b in ("keyring", "file") if b in stored)
    held = f"{len(stored)} stored ({counts})" if stored else "none stored"
    report.add("secrets", "credential store", f"{settings.credential_store}; {held}")
    sources = loaded.secret_sources
    for name in sorted(SECRET_FIELDS):
        set_from = sources.get(name) if getattr(settings, name) is not None else None
        report.add("secrets", name, f"set ({set_from})" if set_from else "not set")
    for name in sorted(n for n in sources if n not in SECRET_FIELDS):
        report.add("secrets", name, f"set ({sources[name]})")


def _dollars(value: Decimal) -> str:
    """A price per million tokens as written on price lists: ``$2.50``, ``$0.075``."""
    text = f"{value:f}"
    if "." in text:
        whole, _, cents = text.partition(".")
        text = f"{whole}.{cents.rstrip('0').ljust(2, '0')}"
    else:
        text += ".00"
    return f"${text}"


def _price_text(model: str, settings: Settings) -> str:
    """What the model's tokens cost, and where that price comes from."""
    from ..telemetry import PRICE_UNKNOWN, unit_price

    price = unit_price(model, settings)
    if price is None and model.startswith("replay:"):
        return f"{PRICE_UNKNOWN}: a replayed conversation asks no paid model"
    if price is None:
        return (
            f"{PRICE_UNKNOWN}: genai-prices has no price for it; give yours in your "
            f'settings file as `model_prices`, e.g. {{"{model}": '
            '{"input_per_mtok": 0.2, "output_per_mtok": 0.6}}'
        )
    source = "your model_prices" if price.source == "settings" else "genai-prices"
    tiers = ", more for long prompts" if price.tiered else ""
    return (
        f"{_dollars(price.input_per_mtok)} in / {_dollars(price.output_per_mtok)} out "
        f"per million tokens ({source}{tiers})"
    )


def _session_rows(report: StatusReport, session: SessionProtocol) -> None:
    from ..turn import session_cost, session_tokens

    report.add("session", "id", session.session_id)
    report.add("session", "notebook", session.notebook_path or "unknown (not sent by the frontend)")
    report.add("session", "turns", str(len(session.live_turns)))
    tokens_in, tokens_out = session_tokens(session)
    usage = f"{tokens_in:,} in / {tokens_out:,} out tokens"
    if tokens_in or tokens_out:  # nothing spent yet costs nothing, priced or not
        usage += f", {session_cost(session)}"
    report.add("session", "usage", usage)
    report.add("session", "auto-approve (%yolo)", "on" if session.auto_confirm else "off")


def _integration_rows(
    report: StatusReport, settings: Settings, session: SessionProtocol | None
) -> None:
    from ..turn import session_toolsets

    builds = (session.model.toolsets if session is not None else None) or session_toolsets(settings)
    if not builds:
        report.add("integrations", "all", "none in this version of Co")
    for build in builds:
        if build.toolset is not None:
            report.add("integrations", build.name, "registered")
        else:
            report.add("integrations", build.name, f"not registered: {build.reason or 'unknown'}")


def _mcp_rows(report: StatusReport, settings: Settings, session: SessionProtocol | None) -> None:
    """A row per MCP server: its state in the session, or its configuration."""
    manager = getattr(session, "mcp", None)
    if manager is not None:
        rows = manager.status_rows()
    else:
        rows = [
            (name, f"connects when a kernel session starts ({spec.transport}, {spec.approval})")
            for name, spec in settings.mcp_servers.items()
        ]
    if not rows:
        report.add("mcp", "servers", "none configured (setting `mcp_servers`)")
    for name, value in rows:
        report.add("mcp", name, value)


def _store_rows(report: StatusReport) -> None:
    from ..memory import memory_store_path
    from ..store import session_store_path
    from ..telemetry import telemetry_db_path

    for label, path in (
        ("telemetry", telemetry_db_path()),
        ("sessions", session_store_path()),
        ("memory", memory_store_path()),
    ):
        report.add("stores", label, str(path) if path.exists() else f"{path} (not created yet)")


def _trust_text(trust: FolderTrust, held: int) -> str:
    """The project folder's trust in one line (`%trust show` says it all)."""
    if trust.status == "trusted":
        return f"trusted ({trust.source})"
    if trust.status == "nothing":
        return "no .co/ files (`%trust show`: whether %%python imports its modules)"
    if trust.status == "refused":
        return "not trusted (trust_policy never)"
    why = "files changed since you trusted it" if trust.status == "changed" else "not trusted"
    return f"{why}: {held} setting(s) or file(s) wait (%trust show)"


def collect_status(
    project_dir: Path, session: SessionProtocol | None = None, *, check_provider: bool = True
) -> StatusReport:
    """Gather settings, model, sandbox, integrations and stores."""
    from ..config import PROVIDERS, parse_model_string

    loaded = session.loaded if session is not None else load_settings(project_dir)
    settings = loaded.settings
    report = StatusReport(problems=list(loaded.problems))
    where = paths()
    files = ", ".join(str(p) for p in loaded.files) or "none (defaults and environment only)"
    report.add("settings", "files in force", files)
    if loaded.managed_file is not None:
        report.add("settings", "managed file", f"{loaded.managed_file} (its settings are locked)")
    if loaded.trust is not None:
        report.add("settings", "folder trust", _trust_text(loaded.trust, len(loaded.held)))
    # Which layer set each value not at its default (secrets: their own rows below).
    for name, origin in sorted(loaded.origins.items()):
        if name not in SECRET_FIELDS:
            report.add("settings", name, f"set by {origin}")
    from ..models import default_model_string

    model = (session.model.override if session is not None else None) or settings.model
    is_default = False
    if not model:
        model = default_model_string(settings)
        is_default = model is not None
    if not model:
        report.add("model", "model", "not configured: set CO_MODEL or use %model provider:model")
    else:
        try:
            provider, name = parse_model_string(model)
        except Exception as exc:
            report.add("model", "model", f"{model}: {exc}")
        else:
            default = ""
            if is_default:
                found = " (found at OLLAMA_HOST)" if provider == "ollama" else ""
                default = f" (the default: nothing is configured){found}"
            report.add("model", "model", f"{provider}:{name} ({PROVIDERS[provider]}){default}")
            report.add("model", "price", _price_text(f"{provider}:{name}", settings))
            if provider == "local":
                # Nothing to ask over the network: the file, and the server if it runs.
                _local_rows(report, name, project_dir, session)
            elif check_provider:
                probe = probe_provider(
                    settings,
                    model,
                    base_dir=project_dir,
                    replay_base=session.model.base_url if session is not None else None,
                )
                mark = "✅" if probe.ok else "❌"
                report.add("model", "reachable", f"{mark} {probe.detail}")
    _secret_rows(report, loaded)
    if session is not None:
        _session_rows(report, session)
    _sandbox_rows(report, settings, project_dir, session)
    _integration_rows(report, settings, session)
    _mcp_rows(report, settings, session)
    _store_rows(report)
    tracing = "on" if settings.tracing else "off"
    if settings.tracing and not settings.trace_content:
        tracing += " (no message content)"
    if settings.otlp_endpoint:
        tracing += f", also OTLP to {settings.otlp_endpoint}"
    report.add("telemetry", "traces", f"{tracing}; {where.data_dir / 'telemetry.db'}")
    limits = [
        f"{settings.max_requests_per_hour} requests/hour" if settings.max_requests_per_hour else "",
        f"{settings.max_tokens_per_turn:,} tokens/turn" if settings.max_tokens_per_turn else "",
    ]
    report.add("telemetry", "rate limits", ", ".join(x for x in limits if x) or "none")
    report.add("paths", "config", str(where.config_dir))
    report.add("paths", "data", str(where.data_dir))
    return report


def _local_rows(
    report: StatusReport, name: str, project_dir: Path, session: SessionProtocol | None
) -> None:
    """The local model's file, size, load time and speed, without starting it."""
    from ..exceptions import ConfigError
    from ..models import local_status_rows, resolve_local_model

    handle = session.model.handle if session is not None else None
    if session is not None and handle is not None and handle.local is not None:
        rows = handle.local.describe(session.history)
    else:
        base = session.workspace if session is not None else project_dir
        try:
            spec = resolve_local_model(name, base_dir=base)
        except ConfigError as exc:
            report.add("model", "local model", str(exc))
            return
        rows = local_status_rows(spec, None, [])
    for item, value in rows:
        report.add("model", item, value)


def _sandbox_rows(
    report: StatusReport, settings: Settings, project_dir: Path, session: SessionProtocol | None
) -> None:
    """Backend, engine, image and container, without creating anything."""
    from ..sandbox import create_sandbox

    sandbox = session.sandbox if session is not None else None
    report.add(
        "sandbox",
        "mode",
        f"{settings.sandbox} (image {settings.sandbox_image}, network {settings.sandbox_network})"
        + ("" if sandbox is not None else "; starts on the first `!` cell or shell tool call"),
    )
    if sandbox is None:
        try:
            sandbox = create_sandbox(
                mode=settings.sandbox,
                image=settings.sandbox_image,
                workspace=project_dir,
                session_id=session.session_id if session is not None else "status",
                kernel_id="status",
                network=settings.sandbox_network,
            )
        except ValueError as exc:
            report.add("sandbox", "backend", str(exc))
            return
    info = sandbox.describe()
    report.add("sandbox", "backend", str(info.get("backend")))
    if info.get("backend") == "subprocess":
        report.add("sandbox", "isolation", "none: commands run on the host")
        return
    engine = (
        "reachable"
        if info.get("engine_reachable")
        else f"not reachable ({info.get('engine_error', 'no answer')})"
    )
    report.add("sandbox", "engine", engine)
    present = info.get("image_present")
    report.add(
        "sandbox",
        "image",
        f"{info.get('image')} ({'present' if present else 'missing' if present is False else 'unknown'})",
    )
    container = info.get("container") or {}
    if isinstance(container, dict):
        report.add("sandbox", "container", f"{container.get('name')}: {container.get('status')}")


def format_status(report: StatusReport, *, markdown: bool) -> str:
    if markdown:
        lines = ["| area | item | value |", "|---|---|---|"]
        # Rows and problems are plain text that quotes outside names (a server's, a
        # model's, a folder's): inert in Co's Markdown.
        lines += [
            f"| {a} | {inert_text(i, table=True)} | {inert_text(v, table=True)} |"
            for a, i, v in report.rows
        ]
        if report.problems:
            lines.append("\n**Settings problems**")
            lines += [f"- {inert_text(p)}" for p in report.problems]
        return "\n".join(lines)
    width = max((len(f"{a}.{i}") for a, i, _ in report.rows), default=10)
    lines = [f"{f'{a}.{i}':<{width}}  {v}" for a, i, v in report.rows]
    if report.problems:
        lines.append("settings problems:")
        lines += [f"  - {p}" for p in report.problems]
    return "\n".join(lines)


_BRIEF_ROWS = {
    ("model", "model"): "model",
    ("model", "reachable"): "reachable",
    ("settings", "folder trust"): "folder trust",
    ("session", "notebook"): "notebook",
    ("session", "auto-approve (%yolo)"): "%yolo",
    ("sandbox", "backend"): "sandbox",
}
"""The rows a terminal's short ``%status`` keeps, by their short names; the rest is summed
up or left to ``%status all``."""
_SANDBOX_TROUBLE = ("not reachable", "missing", "unknown")


def brief_status(report: StatusReport) -> tuple[str, int]:
    """What matters day to day, as Markdown for a 24-line terminal: the model and whether it
    answers, trust, the notebook, %yolo, the sandbox (and its trouble), MCP servers, which
    integrations are off, which secrets are set, every settings problem. Also how many rows
    of the whole report it neither shows nor sums up."""
    rows: list[tuple[str, str]] = []
    secrets: list[str] = []
    registered: list[str] = []
    unregistered: list[str] = []
    left = 0
    for area, item, value in report.rows:
        if (area, item) in _BRIEF_ROWS:
            rows.append((_BRIEF_ROWS[area, item], value))
        elif area == "mcp":
            rows.append((f"MCP {inert_text(item, table=True)}", value))
        elif area == "sandbox" and any(word in value for word in _SANDBOX_TROUBLE):
            rows.append((f"sandbox {inert_text(item, table=True)}", value))
        elif area == "secrets" and value.startswith("set"):
            secrets.append(item)
        elif area == "integrations":
            (registered if value == "registered" else unregistered).append(item)
        elif area != "secrets":
            left += 1
    rows.append(("secrets set", ", ".join(secrets) or "none"))
    tools = f"{len(registered)} of {len(registered) + len(unregistered)} on (%tools lists them)"
    if unregistered:
        tools += f"; off: {', '.join(unregistered)}"
    rows.append(("integrations", tools))
    # Two columns: each short name says its area. Values quote outside names: inert.
    lines = ["| item | value |", "|---|---|"]
    lines += [f"| {item} | {inert_text(value, table=True)} |" for item, value in rows]
    if report.problems:
        lines.append("\n**Settings problems**")
        lines += [f"- {inert_text(p)}" for p in report.problems]
    return "\n".join(lines), left
