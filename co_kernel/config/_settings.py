"""The settings model: every setting Co reads, its type, default, bounds and description.

A field's ``description`` (or its attribute docstring) says what it does; where the values
come from, and which layer wins, is ``_loading.py``.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from ._mcp import McpServerSpec
from ._models import suggested
from ._permissions import PermissionRules

__all__ = [
    "SECRET_FIELDS",
    "ModelPriceSetting",
    "Settings",
    "SubagentSetting",
    "WebPolicy",
    "field_name",
]


class WebPolicy(BaseModel):
    """Whether each web tool runs, waits for approval, or is not offered at all."""

    model_config = ConfigDict(extra="forbid")

    search: Literal["allow", "ask", "deny"] = "allow"
    """web_search."""
    fetch: Literal["allow", "ask", "deny"] = "allow"
    """web_fetch."""


class ModelPriceSetting(BaseModel):
    """The person's price for a model genai-prices has none for, in US dollars."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: Decimal = Field(ge=0)
    """Dollars per million input (prompt) tokens."""
    output_per_mtok: Decimal = Field(ge=0)
    """Dollars per million output (completion) tokens."""
    cache_read_per_mtok: Decimal | None = Field(None, ge=0)
    """Dollars per million input tokens read from the provider's cache (None = input price)."""
    cache_write_per_mtok: Decimal | None = Field(None, ge=0)
    """Dollars per million input tokens written to the cache (None = input price)."""


class SubagentSetting(BaseModel):
    """A subagent defined in settings (``.co/agents/<name>.md`` files define them too)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
    """What `delegate_task` is called with."""
    description: str = Field(min_length=1)
    """One line: what it is good at (the model reads it to choose)."""
    instructions: str = ""
    """Its system prompt."""
    model: str | None = None
    """provider:model; None = the session's model."""
    tools: list[str] | None = None
    """Tool names it may call; None = all of Co's, [] = none."""


def _env(default: Any, name: str, *extra: str) -> Any:
    """A field that also answers to a provider's usual environment variable."""
    return Field(default, validation_alias=AliasChoices(name, f"CO_{name.upper()}", *extra))


class Settings(BaseSettings):
    """Every setting Co reads. Each has a ``CO_<NAME>`` environment variable."""

    model_config = SettingsConfigDict(
        env_prefix="CO_",
        extra="forbid",
        populate_by_name=True,
        validate_default=True,
    )

    # --- model and providers ---
    model: str | None = Field(
        None, description=f"provider:model, e.g. {suggested('gemini')} or {suggested('ollama')}"
    )
    base_url: str | None = Field(None, description="Base URL for the `compat` provider")
    api_key: SecretStr | None = Field(None, description="API key for the `compat` provider")
    gemini_api_key: SecretStr | None = _env(
        None, "gemini_api_key", "GEMINI_API_KEY", "GOOGLE_API_KEY"
    )
    openai_api_key: SecretStr | None = _env(None, "openai_api_key", "OPENAI_API_KEY")
    anthropic_api_key: SecretStr | None = _env(None, "anthropic_api_key", "ANTHROPIC_API_KEY")
    ollama_host: str = _env("http://localhost:11434", "ollama_host", "OLLAMA_HOST")
    ollama_timeout: float = Field(
        0.5, gt=0, description="Seconds each request asking OLLAMA_HOST for a model may take"
    )
    request_timeout: float = Field(60.0, gt=0, description="Seconds to wait for a model response")
    model_accepts_images: bool | Literal["auto"] = Field(
        "auto",
        description="Whether figures and images go to the model as images (else as a line "
        'such as "PNG 640x480 figure"); auto = as pydantic-ai\'s profile of the model says '
        "(set false for a text-only model behind `compat:` or `ollama:`)",
    )
    replay_tokens_per_second: float | None = Field(
        None, description="Pace of a `replay:` script (None = as fast as possible)"
    )
    record_path: str | None = Field(
        None, description="Record the model's answers into this replay script from the first cell"
    )
    replay_mode: Literal["strict", "record-missing"] = Field(
        "strict",
        description="A request a `replay:` script has no step for: fail the cell (strict), or "
        "ask `replay_fallback_model` and add its answer to the script (record-missing)",
    )
    replay_fallback_model: str | None = Field(
        None, description="The model that answers what a record-missing replay lacks"
    )
    replay_approvals: bool = Field(
        False,
        description="A replay gives a call the decision recorded with it instead of asking "
        "(only your own settings or CO_REPLAY_APPROVALS turn it on, never a project file)",
    )

    # --- local model ---
    local_default: bool = Field(
        True,
        description="With no model configured, use the small bundled local model if installed",
    )
    local_threads: int | None = Field(
        None,
        ge=1,
        le=256,
        description="CPU threads llama.cpp uses for a `local:` model (None = half the cores)",
    )
    local_context: int = Field(
        4096, ge=512, le=262_144, description="Context size in tokens of a `local:` model"
    )
    local_port: int = Field(
        0, ge=0, le=65_535, description="Port of the local model server on 127.0.0.1 (0 = any)"
    )
    local_max_tokens: int = Field(
        1024, ge=1, description="Most tokens a `local:` model may generate per request"
    )
    local_cache_mb: int | None = Field(
        None,
        ge=0,
        le=65_536,
        description="MB llama.cpp's prompt cache may hold for a `local:` model "
        "(None = 24 kB per context token, 96 MB for 4,096; 0 = no prompt cache)",
    )

    # --- turn behaviour ---
    verbose: bool = Field(False, description="Show the model's thinking, collapsed")
    personality: str = Field("friendly", description="Tone of the assistant")
    max_request_limit: int = Field(25, ge=1, description="Model requests allowed in one turn")
    model_http_retries: int = Field(
        2, ge=0, description="Retries of failed model requests in one turn (all kinds together)"
    )
    model_backoff_base: float = Field(
        2.0, ge=0, description="Seconds before the first retry of a 5xx or network failure; doubles"
    )
    model_backoff_cap: float = Field(
        30.0, ge=0, description="Longest wait before a retry, even when a provider asks for more"
    )
    tool_retries: int = Field(2, ge=0, description="Retries a tool may ask the model for")
    stream_max_updates_per_second: float = Field(20.0, gt=0, le=60)
    max_prompt_chars: int = Field(200_000, ge=1000, description="Longest cell sent as a prompt")

    # --- approvals ---
    approval_mode: Literal["ask", "deny", "approve"] = Field(
        "deny", description="What a headless run (nbclient, nbval) does with approvals"
    )
    approval_timeout: float | None = Field(None, gt=0, description="Deny after this many seconds")
    approval_timeout_unseen: float | None = Field(
        600,
        gt=0,
        description="Deny a call no page shows (all JupyterLab tabs closed) after this many seconds",
    )
    permissions: PermissionRules = Field(
        default_factory=list,
        description='Rules per tool and argument: {"allow": [...], "ask": [...], "deny": [...]}',
    )
    permissions_accept_project: bool = Field(
        False, description="Headless runs apply the project file's allow rules unasked"
    )
    allow_yolo: bool = Field(
        True,
        description="Whether `%yolo` (and Approve all on a card) may turn on auto-approval; "
        "false in managed settings keeps it off for everyone",
    )
    shell_safe_commands: list[str] = Field(
        default_factory=lambda: [
            "ls", "pwd", "cat", "head", "tail", "wc", "echo", "date", "whoami", "id",
            "uname", "grep", "find", "which", "df", "du", "file", "stat",
            "git status", "git log", "git diff", "git branch", "python3 --version",
        ],
        description="Shell command prefixes approved without asking",
    )  # fmt: skip

    # --- sandbox ---
    sandbox: Literal["auto", "docker", "subprocess"] = "auto"
    sandbox_image: str = "python:3.12-slim"
    sandbox_network: Literal["none", "bridge"] = "none"
    sandbox_memory: str = "1g"
    sandbox_cpus: float = Field(1.0, gt=0)
    sandbox_pids_limit: int = Field(256, ge=16)
    sandbox_timeout: float = Field(120.0, gt=0)
    sandbox_max_timeout: float = Field(600.0, gt=0)
    sandbox_max_output: int = Field(1_000_000, ge=1024)
    sandbox_workspace: Literal["auto", "bind", "copy"] = Field(
        "auto",
        description="How the Docker sandbox sees the workspace: bind-mounted, or copied in "
        "and back around each command (auto: copy when DOCKER_HOST names a remote engine)",
    )
    sandbox_copy_limit_mb: float = Field(
        500.0, gt=0, description="Largest workspace the copy mode copies into the sandbox"
    )

    # --- history governance ---
    max_history_messages: int = Field(
        40, ge=4, description="Messages the model is sent before the oldest turns are dropped"
    )
    tool_output_trim_chars: int = Field(
        2000,
        ge=100,
        description="Tool outputs are cut to this length once they leave the recent half "
        "of the history window",
    )
    summarization_model: str | None = Field(
        None, description="provider:model that writes `%compact` summaries (default: the model)"
    )
    context_window_tokens: int = Field(32_000, ge=1024, description="The model's context window")
    auto_compact_ratio: float = Field(
        0.8, gt=0, le=1, description="Compact when the prompt passes this share of the window"
    )
    compact_keep_turns: int = Field(
        2, ge=0, description="Latest turns `%compact` keeps verbatim after the summary"
    )

    # --- sessions ---
    save_sessions: bool = Field(
        True, description="Write each conversation to the session store for `%resume`"
    )

    # --- tools ---
    obsidian_vault_path: Path | None = Field(
        None, description="Folder of the Obsidian vault the notes tools search and read"
    )
    read_roots: list[Path] = Field(
        default_factory=list, description="Folders besides the workspace the files tools may read"
    )
    scope_folders: list[str] = Field(
        default_factory=lambda: ["*"],
        description="Globs of workspace folders the files tools may touch (relative paths)",
    )
    scope_file_types: list[str] = Field(
        default_factory=lambda: ["*"], description="Globs of file names the files tools may touch"
    )
    scope_operations: list[Literal["read", "write", "create", "delete"]] = Field(
        default_factory=lambda: ["read", "write", "create"],
        description="What the files tools may do inside the scope",
    )
    file_max_bytes: int = Field(
        1_000_000, ge=1024, description="Largest file the files and notes tools read or write"
    )
    file_allow_hard_links: bool = Field(
        False,
        description="Let the files, notes and skill tools read files with more than one hard "
        "link (one may be a link to a file outside the workspace)",
    )
    brave_search_api_key: SecretStr | None = _env(
        None, "brave_search_api_key", "BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY"
    )
    brave_search_base_url: str = Field(
        "https://api.search.brave.com/res/v1", description="Brave Search API base URL"
    )
    web_policy: WebPolicy = Field(
        default_factory=lambda: WebPolicy(),
        description="Per web tool: allow (run), ask (approval) or deny (not offered)",
    )
    web_allowed_domains: list[str] = Field(
        default_factory=list,
        description="When set, web_fetch only reaches these domains (and their subdomains)",
    )
    outbound_always_ask: bool = Field(
        False,
        description="Every call that reaches the network (web_fetch, web_search, MCP tools "
        "that reach the open world) asks, also for a URL you gave and under `%yolo`",
    )
    web_blocked_domains: list[str] = Field(
        default_factory=list, description="Domains (and subdomains) web tools never reach"
    )
    web_private_hosts: list[str] = Field(
        default_factory=list,
        description="host:port pairs (IPv6 in brackets) on private or loopback addresses "
        "web_fetch may reach, spelled as in the URL",
    )
    image_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts whose images in Co's outputs load without a click (`host`, "
        "`host:port` or `*.domain`); every other remote image waits for your click. Your "
        "own or managed settings (or CO_IMAGE_HOSTS) only, never a project file",
    )
    web_fetch_max_bytes: int = Field(2_000_000, ge=1024, description="Largest page web_fetch reads")
    web_fetch_timeout: float = Field(15.0, gt=0, description="Seconds a whole fetch may take")
    web_fetch_max_redirects: int = Field(5, ge=0, le=20)
    web_fetch_page_chars: int = Field(
        20_000, ge=1000, description="Markdown characters per page of a fetched document"
    )

    # --- subagents ---
    subagents: list[SubagentSetting] = Field(
        default_factory=list,
        description="Subagents `delegate_task` may hand a task to (besides .co/agents/*.md)",
    )
    subagent_max_depth: int = Field(
        2, ge=0, le=5, description="How deep subagents may nest (0 = no delegation)"
    )

    # --- memory ---
    memory_max_count: int = Field(200, ge=10, description="Memories kept before the oldest decay")
    memory_dedup_window_days: int = Field(
        7, ge=0, description="A new memory this recent and similar updates the old one"
    )
    memory_dedup_threshold: int = Field(
        85, ge=0, le=100, description="Similarity (0-100) above which memories are duplicates"
    )
    memory_decay_strategy: Literal["summarize", "cut"] = Field(
        "summarize", description="What happens to the oldest memories past memory_max_count"
    )
    memory_decay_percentage: float = Field(
        0.2, gt=0, le=1, description="Share of memory_max_count that decays at once"
    )
    memory_prompt_count: int = Field(
        10, ge=0, description="Relevant or recent memories added to the system prompt"
    )

    # --- integrations ---
    google_client_secrets: Path | None = Field(
        None,
        description="OAuth client (Desktop app) JSON for `co-kernel google auth`; "
        "default <config dir>/google_client_secrets.json",
    )
    google_token_path: Path | None = Field(
        None, description="Where the Google token is kept; default <config dir>/google_token.json"
    )
    google_api_endpoint: str | None = Field(
        None, description="Root URL for Drive, Gmail and Calendar calls instead of Google's (tests)"
    )
    google_token_uri: str | None = Field(
        None,
        description="OAuth token endpoint that refreshes the saved Google token instead of "
        "Google's (tests)",
    )
    slack_bot_token: SecretStr | None = _env(None, "slack_bot_token", "SLACK_BOT_TOKEN")
    credential_store: Literal["auto", "keyring", "file"] = Field(
        "auto",
        description="Where `co-kernel secrets set` keeps secrets: the OS keyring, the "
        "encrypted file in the data dir, or auto (the keyring when one is usable)",
    )
    slack_api_base_url: str | None = Field(
        None, description="Slack Web API base URL replacing https://slack.com/api/ (tests)"
    )

    # --- MCP servers (co_kernel/config/_mcp.py) ---
    mcp_servers: dict[str, McpServerSpec] = Field(
        default_factory=dict,
        description="name -> MCP server: stdio (`command`, `args`, `env`) or streamable HTTP "
        "(`url`, `headers`), with `prefix`, `approval` (ask/trust) and `start_timeout`",
    )

    mcp_allowed_servers: list[str] | None = Field(
        None,
        description="Managed settings only: the MCP servers (names, commands or URLs) other "
        "layers may add besides the managed ones (None = any)",
    )

    # --- trust ---
    trust_policy: Literal["ask", "never"] = Field(
        "ask",
        description="ask: a project folder's settings wait until you trust it; never: no "
        "folder is trusted and no trust card is shown",
    )

    # --- telemetry ---
    tracing: bool = Field(
        True, description="Record OpenTelemetry spans of every turn in <data dir>/telemetry.db"
    )
    trace_content: bool = Field(
        True, description="Put prompts, answers and tool arguments in spans (secrets redacted)"
    )
    otlp_endpoint: str | None = Field(
        None, description="Also send spans to this OTLP/HTTP endpoint, e.g. http://localhost:4318"
    )
    trace_batch_delay: float = Field(
        0.5,
        gt=0,
        le=60,
        description="Spans are written when their turn ends, and every this many seconds "
        "during a longer turn",
    )
    trace_retention_days: int = Field(
        30,
        ge=0,
        le=36500,
        description="Spans older than this many days are deleted from telemetry.db (checked "
        "after the first turn, then daily); 0 keeps them all. The audit log is kept",
    )
    show_footer: Literal["auto", "always", "never"] = Field(
        "auto",
        description="The one-line footer after a turn (model, tokens, requests, duration); "
        "auto = in notebooks and consoles, not in headless runs (nbval, nbclient)",
    )
    max_requests_per_hour: int | None = Field(
        None, ge=1, description="Model requests one session may make in any hour"
    )
    max_tokens_per_turn: int | None = Field(
        None, ge=1, description="Tokens (input + output) one turn may use"
    )
    # --- budgets (telemetry/_budget.py): money in US dollars, tokens for unpriced models ---
    budget_turn: float | None = Field(
        None, gt=0, description="Most one turn may cost, in US dollars (subagents included)"
    )
    budget_conversation: float | None = Field(
        None, gt=0, description="Most one conversation may cost, in US dollars"
    )
    budget_day: float | None = Field(
        None, gt=0, description="Most you may spend per day, in US dollars, over all kernels"
    )
    budget_month: float | None = Field(
        None, gt=0, description="Most you may spend per month, in US dollars, over all kernels"
    )
    budget_turn_tokens: int | None = Field(
        None, ge=1, description="Most tokens one turn may use (any model, priced or not)"
    )
    budget_conversation_tokens: int | None = Field(
        None, ge=1, description="Most tokens one conversation may use"
    )
    budget_day_tokens: int | None = Field(
        None, ge=1, description="Most tokens you may use per day, over all kernels"
    )
    budget_month_tokens: int | None = Field(
        None, ge=1, description="Most tokens you may use per month, over all kernels"
    )
    max_output_tokens: int | None = Field(
        None,
        ge=1,
        description="Most tokens one response may have (sent as max_tokens); with a budget "
        "set and this unset, 4,096: what a budget counts a request's answer as",
    )
    spend_store: Path | None = Field(
        None,
        description="The SQLite file spending is recorded in (default <data dir>/spend.db); "
        "a hub points every person's kernel at one shared file (managed settings)",
    )
    model_prices: dict[str, ModelPriceSetting] = Field(
        default_factory=dict,
        description="provider:model -> your price in dollars per million tokens for a model "
        'genai-prices has no price for, e.g. {"ollama:llama3.2": {"input_per_mtok": 0.2, '
        '"output_per_mtok": 0.6}}; your own or managed settings (or CO_MODEL_PRICES) only',
    )
    trusted_folders: list[str] = Field(
        default_factory=list,
        description="Folders whose `.co/` files apply without asking (headless runs: "
        "papermill, nbclient, CI); the person's own settings or CO_TRUSTED_FOLDERS only",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings merges the layers itself so that it can say which layer a bad
        # value came from; the constructor only validates what it is given.
        return (init_settings,)


SECRET_FIELDS = frozenset(
    name for name, f in Settings.model_fields.items() if "SecretStr" in str(f.annotation)
)


def field_name(key: str) -> str | None:
    """The setting a settings-file key or alias names (``GEMINI_API_KEY`` -> ``gemini_api_key``)."""
    if key in Settings.model_fields:
        return key
    for name, f in Settings.model_fields.items():
        alias = f.validation_alias
        if isinstance(alias, AliasChoices) and key in alias.choices:
            return name
    return None


def _secret_field(key: str) -> str | None:
    """The secret setting a settings-file key is, or None."""
    name = field_name(key)
    return name if name in SECRET_FIELDS else None
