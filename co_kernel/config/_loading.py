"""The loading rules: which layers settings come from, which wins, what each may set.

Layers, lowest precedence first: defaults < user file < project file < environment. The
deployer's managed file is read first and locks what it sets against every other layer
(``_managed.py``: permission rules and MCP servers add up instead, budgets are ceilings);
the project file sets only what ``PROJECT_TABLE`` lets it, and its ``after trust`` rows only
once the person trusts the folder (``_project.py``, ``_trust.py``). A bad file, key or value
is reported with the layer it came from and dropped; the rest still apply.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_settings.exceptions import SettingsError
from pydantic_settings.sources import EnvSettingsSource

from ._credentials import ProjectSecrets, plain_secrets, resolve_secrets
from ._managed import CEILINGS, ManagedLayer, layer_origins, managed_settings_file
from ._mcp import merge_server_layers
from ._paths import paths
from ._permissions import merge_permission_layers
from ._project import project_layer
from ._settings import SECRET_FIELDS, Settings, _secret_field, field_name
from ._trust import FolderTrust, describe_asks, folder_trust, narrow_servers

__all__ = ["LoadedSettings", "load_settings"]

Layers = list[tuple[str, dict[str, Any]]]
"""(label, setting name -> value) per layer, lowest precedence first; the label is the
file's path, or "environment"."""


@dataclass
class LoadedSettings:
    """Settings plus where they came from and what was wrong with them."""

    settings: Settings
    """The effective settings."""
    files: list[Path] = field(default_factory=list)
    """Settings files that exist and were read, lowest precedence first."""
    problems: list[str] = field(default_factory=list)
    """One readable line per ignored value: source, key, problem."""
    secret_sources: dict[str, str] = field(default_factory=dict)
    """Secret setting (or ``mcp_servers.<server>.<key>``) -> where its value comes from:
    keyring, file, environment or settings file."""
    trust: FolderTrust | None = None
    """Whether the project folder's files apply (None: no project folder)."""
    held: list[str] = field(default_factory=list)
    """While the folder is not trusted: what it asks for, one Markdown list item each."""
    origins: dict[str, str] = field(default_factory=dict)
    """Setting -> the layer that set it (``managed (<path>)``, ``user (<path>)``,
    ``project (<path>)``, ``environment (CO_X)``); a setting absent is at its default."""
    managed_file: Path | None = None
    """The managed settings file, when one was read (its keys are locked)."""
    ceilings: dict[str, Any] = field(default_factory=dict)
    """Budget -> the most the managed file lets any other layer set (``CEILINGS``)."""


def _read_json(path: Path, problems: list[str]) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        problems.append(f"{path}: cannot read ({exc.strerror})")
        return {}
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: byte {exc.start}: not UTF-8 text; file ignored")
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg}); file ignored")
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path}: expected a JSON object of settings; file ignored")
        return {}
    return data


def _plain_text_warnings(path: Path, raw: dict[str, Any]) -> list[str]:
    """One line per secret value written in a settings file (the key, never the value)."""
    return [
        f"{path}: {'.'.join(where)} holds a secret in plain text; move it into the "
        "credential store with `co-kernel secrets import`"
        for where, _name, _value in plain_secrets(raw, _secret_field)
    ]


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key, list(Settings.model_fields), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _file_layer(path: Path, files: list[Path], problems: list[str]) -> dict[str, Any]:
    """A settings file's values by setting name; unknown keys and plain secrets reported."""
    raw = _read_json(path, problems)
    if path.exists():
        files.append(path)
    layer: dict[str, Any] = {}
    for key, value in raw.items():
        name = field_name(key)
        if name is None:
            problems.append(f"{path}: unknown setting '{key}'{_suggest(key)}; ignored")
        else:
            layer[name] = value
    problems.extend(_plain_text_warnings(path, raw))
    return layer


def _env_layer(problems: list[str]) -> dict[str, Any]:
    source = EnvSettingsSource(Settings, case_sensitive=False, env_prefix="CO_")
    try:
        return {k: v for k, v in source().items() if v is not None}
    except SettingsError:
        pass
    # A variable holding invalid JSON for a list or object setting: read the variables one
    # by one so that only the broken one is dropped.
    layer: dict[str, Any] = {}
    for name, info in Settings.model_fields.items():
        try:
            value, _key, is_complex = source.get_field_value(info, name)
            value = source.prepare_field_value(name, info, value, is_complex)
        except (SettingsError, ValueError):
            env_name = f"CO_{name.upper()}"
            problems.append(f"environment ({env_name}): {name}: not valid JSON; using the default")
            continue
        if value is not None:
            layer[name] = value
    return layer


def _merge_mcp_servers(
    layers: list[tuple[str, dict[str, Any]]], merged: dict[str, Any], problems: list[str]
) -> None:
    """MCP servers merge by name across layers, and a bad server is dropped alone."""
    if "mcp_servers" not in merged:
        return
    sources = [
        ("environment (CO_MCP_SERVERS)" if label == "environment" else label, layer["mcp_servers"])
        for label, layer in layers
        if "mcp_servers" in layer
    ]
    merged["mcp_servers"], found = merge_server_layers(sources)
    problems.extend(found)


@dataclass
class _PersonLayers:
    """The layers the deployer and the person set, each locked by the managed file."""

    managed: ManagedLayer
    """The deployer's managed file (its values empty when there is none)."""
    user_file: Path
    """The person's settings file (it may not exist)."""
    user: dict[str, Any]
    """The user file's values the managed file leaves open."""
    env: dict[str, Any]
    """The ``CO_*`` (and providers') variables' values the managed file leaves open."""


def _person_layers(files: list[Path], problems: list[str]) -> _PersonLayers:
    """Read the managed file, the user file and the environment."""
    managed_file = managed_settings_file()
    managed = ManagedLayer(managed_file, _file_layer(managed_file, files, problems))
    user_file = paths().settings_file
    user_layer = managed.lock(str(user_file), _file_layer(user_file, files, problems), problems)
    env_layer = managed.lock("environment", _env_layer(problems), problems)
    return _PersonLayers(managed, user_file, user_layer, env_layer)


def _folder_trust(project_dir: Path, person: _PersonLayers) -> FolderTrust:
    """Whether the project folder's files apply: decided by the person's layers (and the
    deployer's), never the folder's."""
    managed, user_layer, env_layer = person.managed.values, person.user, person.env
    named = [
        *managed.get("trusted_folders", []),
        *user_layer.get("trusted_folders", []),
        *env_layer.get("trusted_folders", []),
    ]
    policy = managed.get(
        "trust_policy", env_layer.get("trust_policy", user_layer.get("trust_policy", "ask"))
    )
    return folder_trust(
        project_dir,
        trusted_folders=[str(n) for n in named if isinstance(n, str)],
        policy=str(policy),
    )


@dataclass
class _ProjectLayer:
    """The project file's layer as it applies, and what trust and secrets make of it."""

    label: str
    """The project file's path."""
    values: dict[str, Any]
    """What it sets that applies: allowed by ``PROJECT_TABLE`` and trust, not locked."""
    trust: FolderTrust
    """Whether the folder's files apply."""
    held: list[str]
    """While the folder is not trusted: what it asks for, one Markdown list item each."""
    secrets: ProjectSecrets
    """Where its secret references may point (``resolve_secrets``)."""


def _read_project(
    project_dir: Path, person: _PersonLayers, files: list[Path], problems: list[str]
) -> _ProjectLayer:
    """The project file's layer: only its rows ``PROJECT_TABLE`` allows, its ``after trust``
    rows only when the folder is trusted, then locked by the managed file."""
    project_file = project_dir / ".co" / "settings.json"
    layer = _file_layer(project_file, files, problems)
    trust = _folder_trust(project_dir, person)
    layer, refused, held = project_layer(
        layer, project_dir, trusted=trust.trusted, user_file=person.user_file
    )
    problems.extend(refused)
    held_lines: list[str] = []
    if not trust.trusted:
        held_lines = describe_asks(project_dir, held, SECRET_FIELDS)
    else:  # a server loading more of the folder than its hash covers does not start
        problems.extend(narrow_servers(project_dir, layer))
    layer = person.managed.lock(str(project_file), layer, problems)
    named_servers = layer.get("mcp_servers")
    servers = frozenset(named_servers) if isinstance(named_servers, dict) else frozenset[str]()
    secrets = ProjectSecrets(str(project_file), project_dir, servers)
    return _ProjectLayer(str(project_file), layer, trust, held_lines, secrets)


def _merge(
    layers: Layers, project_dir: Path | None, problems: list[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The layers merged, a higher one winning setting by setting (MCP servers by name,
    permission rules by ``merge_permission_layers``); and the layer each setting came from."""
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for label, layer in layers:
        for name, value in layer.items():
            merged[name] = value
            origin[name] = label
    _merge_mcp_servers(layers, merged, problems)
    merge_permission_layers(layers, merged, project_dir, problems)
    return merged, origin


def _validate(merged: dict[str, Any], origin: dict[str, str], problems: list[str]) -> Settings:
    """The settings from ``merged``; each bad value reported with the layer it came from and
    dropped from ``merged``, so that setting keeps its default."""
    # Drop each offending key and try again; a bounded loop since every pass removes one.
    for _ in range(len(merged) + 1):
        try:
            return Settings(**merged)
        except ValidationError as exc:
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            for err in exc.errors():
                if not err["loc"]:
                    continue
                name = str(err["loc"][0])
                where = origin.get(name, "default")
                env_name = f"CO_{name.upper()}"
                source = f"environment ({env_name})" if where == "environment" else where
                problems.append(f"{source}: {name}: {err['msg']}; using the default")
            for name in bad:
                merged.pop(name, None)
            if not bad:
                raise
    raise RuntimeError("settings could not be validated")  # pragma: no cover


def load_settings(project_dir: Path | None = None) -> LoadedSettings:
    """Read every layer, validate, and report each bad key instead of failing.

    The project layer applies its ``after trust`` rows only when the person trusts the
    folder (``_trust.folder_trust``, decided from the user's record and settings, never
    from the folder's files)."""
    problems: list[str] = []
    files: list[Path] = []
    person = _person_layers(files, problems)
    managed = person.managed
    layers: Layers = [(managed.label, managed.values)] if managed.values else []
    layers.append((str(person.user_file), person.user))
    kinds = {managed.label: "managed", str(person.user_file): "user"}
    project = None
    if project_dir is not None:
        project = _read_project(project_dir, person, files, problems)
        kinds[project.label] = "project"
        layers.append((project.label, project.values))
    layers.append(("environment", person.env))
    merged, origin = _merge(layers, project_dir, problems)
    secret_sources = resolve_secrets(
        merged, origin, SECRET_FIELDS, problems, project.secrets if project else None
    )
    settings = _validate(merged, origin, problems)
    return LoadedSettings(
        settings,
        files,
        problems,
        secret_sources,
        trust=project.trust if project else None,
        held=project.held if project else [],
        origins=layer_origins(layers, kinds, set(merged)),
        managed_file=managed.path if managed.path in files else None,
        ceilings={k: v for k, v in managed.values.items() if k in CEILINGS},
    )
