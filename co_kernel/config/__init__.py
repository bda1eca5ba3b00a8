"""Settings and paths.

Precedence, lowest first: defaults < user file (``<config dir>/settings.json``) <
project file (``.co/settings.json`` beside the notebook) < environment (``CO_<NAME>``
for every setting, plus the providers' usual variables such as ``GEMINI_API_KEY``).
A project file sets only what ``PROJECT_TABLE`` lets it (``_project.py``): never where
the user's keys go, what runs unasked or how far the tools reach. A deployer's managed
file (``/etc/co/settings.json`` or ``CO_MANAGED_SETTINGS``), read first, locks the keys
it sets against every other layer (``_managed.py``).

``CO_HOME`` moves the whole user directory (config, data, cache) so tests run in a
temporary home. Invalid settings never stop the kernel: each bad key is reported with
the file (or variable) it came from and dropped, and the rest still apply.

The settings model is ``_settings.py``, the loading rules (layers, precedence, locks and
ceilings) ``_loading.py``, the user's folders ``_paths.py``; this module only gathers what
the rest of Co imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._credentials import CREDENTIAL_NAME, SECRET_REF, CredentialError, CredentialStore
from ._loading import LoadedSettings, load_settings
from ._managed import CEILINGS, MANAGED, MANAGED_ENV, managed_settings_file
from ._mcp import McpServerSpec, expand_vars
from ._models import PROVIDERS, SUGGESTED_MODELS, parse_model_string, suggested
from ._paths import CoPaths, paths
from ._permissions import (
    KINDS,
    PROJECT,
    PermissionRule,
    Permissions,
    RuleKind,
    save_user_rule,
    save_user_settings,
)
from ._private import private_file, private_folder, tighten_private_files
from ._project import TABLE as PROJECT_TABLE
from ._project import ProjectRow, project_layer, project_secret_name, readme_table
from ._protected import credential_files, is_protected, is_protected_name, protected_paths
from ._settings import (
    SECRET_FIELDS,
    ModelPriceSetting,
    Settings,
    SubagentSetting,
    WebPolicy,
    field_name,
)
from ._trust import (
    FolderTrust,
    folder_trust,
    forget_folder,
    trust_folder,
    trust_notice,
    trust_record_path,
    trust_records,
    trusted_for_code,
)

if TYPE_CHECKING:
    from ._secrets_cli import add_secrets_commands

__all__ = [
    "CEILINGS",
    "CREDENTIAL_NAME",
    "KINDS",
    "MANAGED",
    "MANAGED_ENV",
    "PROJECT",
    "PROJECT_TABLE",
    "PROVIDERS",
    "SECRET_FIELDS",
    "SECRET_REF",
    "SUGGESTED_MODELS",
    "CoPaths",
    "CredentialError",
    "CredentialStore",
    "FolderTrust",
    "LoadedSettings",
    "McpServerSpec",
    "ModelPriceSetting",
    "PermissionRule",
    "Permissions",
    "ProjectRow",
    "RuleKind",
    "Settings",
    "SubagentSetting",
    "WebPolicy",
    "add_secrets_commands",
    "credential_files",
    "expand_vars",
    "field_name",
    "folder_trust",
    "forget_folder",
    "is_protected",
    "is_protected_name",
    "load_settings",
    "managed_settings_file",
    "parse_model_string",
    "paths",
    "private_file",
    "private_folder",
    "project_layer",
    "project_secret_name",
    "protected_paths",
    "readme_table",
    "save_user_rule",
    "save_user_settings",
    "suggested",
    "tighten_private_files",
    "trust_folder",
    "trust_notice",
    "trust_record_path",
    "trust_records",
    "trusted_for_code",
]


def __getattr__(name: str) -> Any:
    # The `co-kernel secrets` command line loads with that command, not with the settings.
    if name == "add_secrets_commands":
        from ._secrets_cli import add_secrets_commands

        return add_secrets_commands
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
