"""One status report for `%status` and `co-kernel status`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import SECRET_FIELDS, load_settings, paths

__all__ = ["StatusReport", "check_model_reachable", "collect_status", "format_status"]


@dataclass
class StatusReport:
    """What is configured and what answers."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)
    """(area, item, value) rows."""
    problems: list[str] = field(default_factory=list)
    """Settings problems, one per line."""

    def add(self, area: str, item: str, value: str) -> None:
        self.rows.append((area, item, value))


def check_model_reachable(base_url: str | None, timeout: float = 3.0) -> str:
    """GET {base_url}/models and describe the answer; never raises."""
    if not base_url:
        return "not checked (hosted API)"
    import urllib.error
    import urllib.request

    url = base_url.rstrip("/") + "/models"
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            took = (time.monotonic() - started) * 1000
            return f"answers ({resp.status}, {took:.0f} ms)"
    except urllib.error.HTTPError as exc:
        return f"answers with HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"unreachable ({reason})"


def collect_status(project_dir: Path, session: Any = None) -> StatusReport:
    """Gather settings, model, sandbox and stores; cheap and side-effect free."""
    from .turn._providers import PROVIDERS, parse_model_string

    loaded = session.loaded if session is not None else load_settings(project_dir)
    settings = loaded.settings
    report = StatusReport(problems=list(loaded.problems))
    where = paths()
    files = ", ".join(str(p) for p in loaded.files) or "none (defaults and environment only)"
    report.add("settings", "files in force", files)
    model = (session.model_string if session is not None else None) or settings.model
    if not model:
        report.add("model", "model", "not configured: set CO_MODEL or use %model provider:model")
    else:
        try:
            provider, name = parse_model_string(model)
        except Exception as exc:
            report.add("model", "model", f"{model}: {exc}")
        else:
            report.add("model", "model", f"{provider}:{name} ({PROVIDERS[provider]})")
            base = None
            if provider == "ollama":
                base = settings.ollama_host.rstrip("/") + "/v1"
            elif provider in ("compat", "openai") and settings.base_url:
                base = settings.base_url
            elif provider == "replay" and session is not None and session._handle is not None:
                base = session._handle.base_url
            report.add("model", "reachable", check_model_reachable(base))
    keys = [n for n in sorted(SECRET_FIELDS) if getattr(settings, n) is not None]
    report.add("model", "keys set", ", ".join(keys) or "none")
    report.add(
        "sandbox",
        "mode",
        f"{settings.sandbox} (image {settings.sandbox_image}, network {settings.sandbox_network})",
    )
    _sandbox_rows(report, settings, project_dir, session)
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


def _sandbox_rows(report: StatusReport, settings: Any, project_dir: Path, session: Any) -> None:
    """Backend, engine, image and container, without creating anything."""
    from .sandbox import create_sandbox

    sandbox = session.deps.sandbox if session is not None else None
    if sandbox is None:
        try:
            sandbox = create_sandbox(
                mode=settings.sandbox,
                image=settings.sandbox_image,
                workspace=project_dir,
                session_id=session.deps.session_id if session is not None else "status",
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
        lines += [f"| {a} | {i} | {v} |" for a, i, v in report.rows]
        if report.problems:
            lines.append("\n**Settings problems**")
            lines += [f"- {p}" for p in report.problems]
        return "\n".join(lines)
    width = max((len(f"{a}.{i}") for a, i, _ in report.rows), default=10)
    lines = [f"{f'{a}.{i}':<{width}}  {v}" for a, i, v in report.rows]
    if report.problems:
        lines.append("settings problems:")
        lines += [f"  - {p}" for p in report.problems]
    return "\n".join(lines)
