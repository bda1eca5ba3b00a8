"""Co's exceptions, one hierarchy, by audience::

    CoError                      base of everything Co raises on purpose
    ├── ConfigError              the person must change a setting; the message names the fix
    │   ├── ProviderNotConfigured    no model chosen, or its key is missing
    │   └── UnknownProvider          `%model` / CO_MODEL names a provider Co does not know
    └── TurnError                a turn could not finish (provider refused, budget spent)

Tools signal the model with pydantic-ai's ``ModelRetry``; the sandbox has its own
``SandboxUnavailable`` (a ``ConfigError``) in ``co_kernel.sandbox``.
"""

from __future__ import annotations

__all__ = ["CoError", "ConfigError", "ProviderNotConfigured", "TurnError", "UnknownProvider"]


class CoError(Exception):
    """Base class of the errors Co raises on purpose; their message is for the person."""


class ConfigError(CoError):
    """A setting is missing or wrong; the message says which and how to fix it."""


class ProviderNotConfigured(ConfigError):
    """No model is chosen, or the chosen provider lacks its key."""


class UnknownProvider(ConfigError):
    """The model string names a provider Co does not support."""


class TurnError(CoError):
    """A turn ended early for a reason the person should read."""
