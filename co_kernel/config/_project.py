"""What a project's ``.co/settings.json`` may set: the table, written once.

A project file is data that came with a folder, often a cloned repository; the person's
own settings carry their authority. Every setting has one row:

- ``project``: any folder may set it; at worst it changes how Co looks or how long it waits;
- ``after trust``: it gives the folder power (prompts, models, tools, rules), so it applies
  only once the person trusts the folder (workspace trust, ``_trust.py``);
- ``never``: it carries the user's authority (where their keys and prompts go, what runs
  unasked, how far the tools reach, the user's own stores), so a project file never sets
  it, trusted or not: it is ignored, and the first cell says so and where to set it.

Some rows are ``never`` for some values only (``sandbox: subprocess``, a ``record_path``
outside the folder). ``project_layer`` applies the table to a project file; the table in
docs/settings.md is generated from ``TABLE`` (``readme_table``) and a test keeps the two equal.
A project's ``secret:NAME`` reads the project's own namespace of the credential store
(``project_secret_name``), never the user's general secrets.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "PROJECT_SECRET",
    "TABLE",
    "ProjectRow",
    "Status",
    "project_layer",
    "project_secret_name",
    "readme_table",
]

Status = Literal["project", "after trust", "never"]
PROJECT_SECRET = "project:"
"""How the name of every credential-store entry of a project's namespace starts."""


def _outside(value: Any, folder: Path) -> bool:
    """Whether a path (or any path of a list) leads outside the folder, links resolved."""
    values = value if isinstance(value, list) else [value]
    root = folder.resolve()
    for item in values:
        if not isinstance(item, str | os.PathLike):
            continue  # not a path: validation reports it
        path = (folder / Path(item).expanduser()).resolve()
        if not path.is_relative_to(root):
            return True
    return False


@dataclass(frozen=True)
class ProjectRow:
    """One setting's row: from a project file allowed, after trust, or never."""

    status: Status
    """What the row says for any value (``never_if`` may make some values ``never``)."""
    why: str
    """What the setting decides, as the first cell and docs/settings.md say it."""
    never_if: Callable[[Any, Path], bool] | None = None
    """For a row never only for some values: whether this value (and folder) is one."""
    never_text: str = ""
    """Those values, in words (``subprocess``)."""

    def refuses(self, value: Any, folder: Path) -> bool:
        """Whether a project file may not set this value, trusted or not."""
        return self.status == "never" or (
            self.never_if is not None and self.never_if(value, folder)
        )


def _row(status: Status, why: str, *names: str) -> dict[str, ProjectRow]:
    return dict.fromkeys(names, ProjectRow(status, why))


# Where the user's keys and prompts go: a project URL would receive the user's key (OpenAI
# and compat send their key to `base_url`), the prompts, the Slack token, the Brave key or
# the spans. The Google files and endpoints hold or receive the user's Google token.
_KEYS_AND_PROMPTS = "where your keys and prompts are sent"
_GOOGLE = "where your Google token is kept or sent"
# What runs unasked: each would let a call run without the person's click.
_UNASKED = "what runs without asking you"
# What a deployer or the person decides for every folder: which MCP servers may start,
# whether any folder is trusted. A project that chose would choose for itself.
_ADMIN = "what you or your administrator allow in every folder"
# How far the tools reach: each widens a guard beyond the folder.
_REACH = "how far the tools reach beyond this folder"
# The user's own stores and budget, shared by every folder: a project would delete the
# user's memories or spans, turn off their record, or raise their spending caps.
_STORES = "your own stores, shared by every folder"
_BUDGET = "your spending limits"
# What the folder asks the model and the tools to do: prompts, models, tools, rules. Power
# the person grants by trusting the folder. A key picks whose account receives the prompts.
_POWER = "what this folder makes the model and its tools do"
_ACCOUNT = "whose account receives your prompts and tool calls"
# Pace, limits, looks and sizes: at worst slower, shorter or louder; nothing widens.
_HARMLESS = "pace, limits and looks"

TABLE: dict[str, ProjectRow] = {
    **_row("never", _KEYS_AND_PROMPTS, "base_url", "ollama_host"),
    **_row("never", _KEYS_AND_PROMPTS, "slack_api_base_url", "brave_search_base_url"),
    **_row("never", _KEYS_AND_PROMPTS, "otlp_endpoint"),
    **_row("never", _GOOGLE, "google_api_endpoint", "google_token_uri"),
    **_row("never", _GOOGLE, "google_client_secrets", "google_token_path"),
    **_row("never", "where your secrets are stored", "credential_store"),
    **_row("never", _UNASKED, "approval_mode", "replay_approvals", "permissions_accept_project"),
    **_row("never", "which folders you trust", "trusted_folders"),
    **_row("never", _UNASKED, "allow_yolo", "outbound_always_ask"),
    **_row("never", _ADMIN, "mcp_allowed_servers", "trust_policy"),
    "sandbox": ProjectRow(
        "project",
        "whether commands run in a container or on your computer",
        never_if=lambda value, _folder: value == "subprocess",
        never_text="`subprocess`",
    ),
    **_row("never", _REACH, "read_roots", "file_allow_hard_links", "web_private_hosts"),
    **_row("never", _REACH, "sandbox_network", "sandbox_image"),
    "obsidian_vault_path": ProjectRow(
        "after trust", _REACH, never_if=_outside, never_text="outside the folder"
    ),
    "record_path": ProjectRow(
        "after trust",
        "where the model's answers are written",
        never_if=_outside,
        never_text="outside the folder",
    ),
    **_row("never", _STORES, "tracing", "trace_content", "trace_retention_days"),
    **_row("never", _STORES, "memory_max_count", "memory_dedup_window_days"),
    **_row("never", _STORES, "memory_dedup_threshold", "memory_decay_strategy"),
    **_row("never", _STORES, "memory_decay_percentage"),
    **_row("never", _BUDGET, "max_requests_per_hour", "max_tokens_per_turn"),
    **_row("never", _BUDGET, "budget_turn", "budget_conversation", "budget_day"),
    **_row("never", _BUDGET, "budget_month", "budget_turn_tokens", "budget_day_tokens"),
    **_row("never", _BUDGET, "budget_conversation_tokens", "budget_month_tokens"),
    **_row("never", _BUDGET, "max_output_tokens"),
    **_row("never", _STORES, "spend_store"),
    # A project's price would change what the person is told a turn cost (a price of 0 for
    # a paid model hides the spending), so only the person or a deployer names prices.
    **_row("never", _BUDGET, "model_prices"),
    # An image loads as the page renders it: a listed host receives whatever URL an answer
    # writes (EchoLeak, CamoLeak), so only the person chooses which hosts may.
    **_row("never", "what your page fetches without your click", "image_hosts"),
    **_row("after trust", _ACCOUNT, "api_key", "gemini_api_key", "openai_api_key"),
    **_row("after trust", _ACCOUNT, "anthropic_api_key", "brave_search_api_key"),
    **_row("after trust", _ACCOUNT, "slack_bot_token"),
    **_row("after trust", _POWER, "model", "summarization_model", "replay_fallback_model"),
    **_row("after trust", _POWER, "replay_mode", "personality", "subagents", "mcp_servers"),
    **_row("after trust", _POWER, "permissions", "shell_safe_commands", "web_policy"),
    **_row("after trust", _POWER, "scope_folders", "scope_file_types", "scope_operations"),
    **_row("after trust", _POWER, "web_allowed_domains", "web_blocked_domains"),
    **_row("project", _HARMLESS, "ollama_timeout", "request_timeout", "replay_tokens_per_second"),
    **_row("project", _HARMLESS, "local_default", "local_threads", "local_context"),
    **_row("project", _HARMLESS, "local_port", "local_max_tokens", "local_cache_mb"),
    **_row("project", _HARMLESS, "verbose", "max_request_limit", "model_http_retries"),
    **_row("project", _HARMLESS, "model_backoff_base", "model_backoff_cap", "tool_retries"),
    **_row("project", _HARMLESS, "stream_max_updates_per_second", "max_prompt_chars"),
    **_row("project", _HARMLESS, "approval_timeout", "approval_timeout_unseen"),
    **_row("project", _HARMLESS, "sandbox_memory", "sandbox_cpus", "sandbox_pids_limit"),
    **_row("project", _HARMLESS, "sandbox_timeout", "sandbox_max_timeout", "sandbox_max_output"),
    **_row("project", _HARMLESS, "sandbox_workspace", "sandbox_copy_limit_mb"),
    **_row("project", _HARMLESS, "max_history_messages", "tool_output_trim_chars"),
    **_row("project", _HARMLESS, "context_window_tokens", "auto_compact_ratio"),
    **_row("project", _HARMLESS, "compact_keep_turns", "save_sessions", "file_max_bytes"),
    **_row("project", _HARMLESS, "web_fetch_max_bytes", "web_fetch_timeout"),
    **_row("project", _HARMLESS, "web_fetch_max_redirects", "web_fetch_page_chars"),
    **_row("project", _HARMLESS, "subagent_max_depth", "memory_prompt_count"),
    **_row("project", _HARMLESS, "trace_batch_delay", "show_footer", "model_accepts_images"),
}
"""Every setting -> its row (a test checks that every Settings field has one)."""


def project_layer(
    raw: dict[str, Any], folder: Path, *, trusted: bool, user_file: Path
) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """The settings a project file may give (setting name -> value), one notice per
    setting it may never give (``never`` rows and values), and the ``after trust`` settings
    held back until the folder is ``trusted`` (the trust notice lists them, so they are
    not notices). ``raw`` maps setting names (not aliases) to values."""
    where = folder / ".co" / "settings.json"
    kept: dict[str, Any] = {}
    notices: list[str] = []
    held: dict[str, Any] = {}
    for name, value in raw.items():
        row = TABLE[name]
        if row.refuses(value, folder):
            notices.append(
                f"{where}: {name}: a project file cannot set this ({row.why}); ignored. "
                f"If this folder needs it, set it in your own settings ({user_file})"
            )
        elif row.status == "after trust" and not trusted:
            held[name] = value
        else:
            kept[name] = value
    return kept, notices, held


def project_secret_name(folder: Path, name: str) -> str:
    """The credential-store entry a project file's ``secret:NAME`` reads: the project's
    own namespace, keyed by the folder's real path (``co-kernel secrets set
    --for-project NAME`` fills it)."""
    digest = hashlib.sha256(os.fsencode(os.path.realpath(folder))).hexdigest()[:16]
    return f"{PROJECT_SECRET}{digest}:{name}"


def readme_table() -> str:
    """The table as Markdown, one line per kind of setting (``never`` first), the way
    docs/settings.md publishes it."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name, row in TABLE.items():
        status = row.status
        if row.never_if is not None:
            status = f"never {row.never_text}, else {status}"
        groups.setdefault((status, row.why), []).append(f"`{name}`")

    def rank(status: str) -> int:
        return ["never", "never ", "after trust", "project"].index(
            status if status in ("never", "after trust", "project") else "never "
        )

    lines = [
        "| From `.co/settings.json` | Settings | Because they decide |",
        "|---|---|---|",
    ]
    for (status, why), names in sorted(groups.items(), key=lambda item: rank(item[0][0])):
        lines.append(f"| {status} | {', '.join(names)} | {why} |")
    return "\n".join(lines) + "\n"
