"""Secrets never leave the kernel: API keys, OAuth tokens and bearer headers are scrubbed.

A ``Redactor`` knows two kinds of secret:

- literal values: every ``SecretStr`` in the settings (also one a later layer
  overrides), every value in Co's credential store (``co-kernel secrets``), the values of the provider variables and of any environment variable
  whose name says it holds a credential (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``,
  ``*PASSWORD*``, ...), and the tokens and client secrets in OAuth files (Google's token
  and client files, Application Default Credentials);
- shapes: ``Authorization:`` headers, ``Bearer``/``Basic`` credentials, ``key=value``
  pairs whose key names a secret, and the well-known key formats (``sk-...``,
  ``AIza...``, ``ya29....``, ``xoxb-...``, ``ghp_...``, ``glpat-...``).

It is applied where text leaves the process or lands on disk: span attributes and
events (the SQLite and OTLP exporters), audit rows, cell outputs and the error replies,
memories before they are stored, and tool results before the model provider sees them.
Each shape's regular expression only runs when a cheap substring test says it could
match, so clean text (almost all of it) costs one ``lower()`` and a few ``in`` tests.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..inert import escaped_forms

__all__ = ["REDACTED", "Redactor", "redact_value", "secret_env_names"]

REDACTED = "[REDACTED]"

# Shorter values are too likely to be ordinary words ("none", "test") to replace blindly.
_MIN_LITERAL = 6

# Provider variables Co reads; always treated as secret whatever their length.
_PROVIDER_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "CO_API_KEY",
    "CO_GEMINI_API_KEY",
    "CO_OPENAI_API_KEY",
    "CO_ANTHROPIC_API_KEY",
)


@dataclass(frozen=True)
class _Shape:
    """A secret recognised by its form rather than its value."""

    triggers: tuple[str, ...]
    """Lower-case substrings, one of which must occur for the pattern to be tried."""
    pattern: re.Pattern[str]
    """What to replace; group ``keep`` (when present) survives, the rest is redacted."""


def _shape(triggers: tuple[str, ...], pattern: str) -> _Shape:
    return _Shape(triggers, re.compile(pattern, re.IGNORECASE))


_TOKEN = r"[A-Za-z0-9\-._~+/]+=*"
_KEY_PAIRS = (
    ("api", "key"),
    ("access", "token"),
    ("refresh", "token"),
    ("id", "token"),
    ("auth", "token"),
    ("client", "secret"),
    ("secret", "key"),
)
# Lower-case names of secret keys as written in JSON, URLs and env files.
_SECRET_KEYS = (
    *(f"{a}{sep}{b}" for a, b in _KEY_PAIRS for sep in ("_", "-", "")),
    "password",
    "passwd",
)
_SHAPES: tuple[_Shape, ...] = (
    # A whole header value: "Authorization: Bearer x", '"authorization": "Basic x"'.
    _shape(
        ("authorization",),
        r"(?P<keep>authorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?"
        # Not the scheme word itself: "Authorization: Bearer" waits for its token.
        r"(?!(?:bearer|basic|token)\b)" + _TOKEN,
    ),
    # A credential after its scheme anywhere else; needs a digit or some length so that
    # prose such as "bearer tokens" stays readable.
    _shape(
        ("bearer", "basic"),
        r"(?P<keep>\b(?:bearer|basic)\s+)(?=[A-Za-z0-9\-._~+/]*\d|[A-Za-z0-9\-._~+/]{20,})"
        + _TOKEN,
    ),
    # key=value and "key": "value" where the key names a secret.
    _shape(
        _SECRET_KEYS,
        r"(?P<keep>(?:api[_-]?key|access[_-]?token|refresh[_-]?token|id[_-]?token|"
        r"auth[_-]?token|client[_-]?secret|secret[_-]?key|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
        r"(?!\[REDACTED\])[^\"'\s,;&}]{4,}",
    ),
    # Well-known key formats.
    _shape(("sk-",), r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"),
    _shape(("aiza",), r"\bAIza[0-9A-Za-z_\-]{30,}"),
    _shape(("ya29.",), r"\bya29\.[0-9A-Za-z_\-.]{10,}"),
    _shape(("1//",), r"(?<![\w/])1//[0-9A-Za-z_\-]{20,}"),
    _shape(("xox",), r"\bxox[abposr]-[0-9A-Za-z\-]{10,}"),
    _shape(("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    _shape(("glpat-",), r"\bglpat-[A-Za-z0-9_\-]{16,}"),
)


def _trie_pattern(words: Iterable[str]) -> str:
    """A regular expression for any of the words, written as a trie.

    ``a(?:pi(?:_key|key)|uth...)|b(?:asic|earer)|...`` rather than ``api_key|apikey|...``:
    the engine rejects a position after one character instead of trying every word there,
    which makes the search several times faster over long clean text.
    """
    heads: dict[str, list[str]] = {}
    ends = False
    for word in sorted(set(words)):
        if word:
            heads.setdefault(word[0], []).append(word[1:])
        else:
            ends = True
    branches = [re.escape(head) + _trie_pattern(tails) for head, tails in heads.items()]
    if not branches:
        return ""
    if ends:
        return f"(?:{'|'.join(branches)})?"
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


# One search over the lower-cased text decides whether any shape needs trying at all.
_ANY_TRIGGER = re.compile(_trie_pattern(t for shape in _SHAPES for t in shape.triggers))


def secret_env_names(environ: Mapping[str, str] | None = None) -> list[str]:
    """Environment variables whose values are credentials."""
    from ..config import CREDENTIAL_NAME

    env = os.environ if environ is None else environ
    return [
        name for name in env if name in _PROVIDER_ENV or CREDENTIAL_NAME.search(name) is not None
    ]


def _file_secrets(path: Path) -> list[str]:
    """Values of secret settings written in a settings file (unreadable files: none)."""
    import json

    from ..config import SECRET_FIELDS, SECRET_REF, field_name

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    found = [
        value
        for key, value in data.items()
        if isinstance(value, str) and field_name(key) in SECRET_FIELDS
    ]
    # `secret:NAME` names a stored entry (whose value the store adds); it is no secret itself.
    found = [v for v in found if not v.startswith(SECRET_REF)]
    servers = data.get("mcp_servers")
    if isinstance(servers, dict):
        # Env and header values of MCP servers, also of those a later layer replaced.
        for spec in servers.values():
            if not isinstance(spec, dict):
                continue
            for key in ("env", "headers"):
                values = spec.get(key)
                if isinstance(values, dict):
                    found += [v for v in values.values() if isinstance(v, str)]
    return found


# Keys whose values are credentials in OAuth token, client and service-account files.
_CREDENTIAL_KEYS = frozenset(
    {"token", "access_token", "refresh_token", "id_token", "client_secret", "private_key"}
)


def _json_secrets(path: Path) -> list[str]:
    """Credential values anywhere in a JSON file (missing or unreadable files: none)."""
    import json

    try:
        if not path.is_file() or path.stat().st_size > 1_000_000:
            return []
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return _credential_values(data)


def _stored_secrets(environ: Mapping[str, str]) -> list[str]:
    """Every value in Co's credential store, and the credentials inside stored JSON (the
    Google token); an unreadable store adds nothing (settings resolution reports it)."""
    import json

    from ..config import CredentialStore

    found: list[str] = []
    for value in CredentialStore(environ=environ).values().values():
        found.append(value)
        if value.startswith("{"):
            with contextlib.suppress(ValueError):
                found += _credential_values(json.loads(value))
    return found


def _credential_values(data: Any) -> list[str]:
    """Values of credential keys anywhere in parsed JSON."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in _CREDENTIAL_KEYS and isinstance(item, str):
                    found.append(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(data)
    return found


def _secret_values(value: Any) -> Iterable[str]:
    from pydantic import SecretStr

    if isinstance(value, SecretStr):
        yield value.get_secret_value()
    elif callable(getattr(value, "secret_values", None)):
        # A settings object that knows its secrets (an MCP server: env and header values,
        # also after `${VAR}` expansion).
        yield from value.secret_values()
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _secret_values(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _secret_values(item)


class Redactor:
    """Replaces secrets in text and in JSON-like values with ``[REDACTED]``."""

    def __init__(self, literals: Iterable[str] = ()) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        # Each in the forms Co's Markdown may give it too (``inert_text`` escapes ``_``,
        # ``$``, ...): the outputs are redacted as Markdown source, before they are rendered.
        unique = {
            form
            for s in literals
            if s and len(s.strip()) >= _MIN_LITERAL
            for form in escaped_forms(s.strip())
        }
        self.literals: tuple[str, ...] = tuple(sorted(unique, key=len, reverse=True))

    def add(self, literals: Iterable[str]) -> None:
        """Learn more secrets (settings read again during the session, e.g. `%mcp reload`)."""
        # Only the new ones get their escaped forms (the known ones have theirs already).
        merged = set(self.literals) | set(Redactor(literals).literals)
        self.literals = tuple(sorted(merged, key=len, reverse=True))

    @classmethod
    def from_settings(
        cls,
        settings: Any = None,
        environ: Mapping[str, str] | None = None,
        files: Iterable[Path] = (),
    ) -> Redactor:
        """Secrets of these settings (every ``SecretStr``), the environment and the files.

        A key set in a settings file but overridden by a later layer is not in the
        effective settings, yet it is still a secret: ``files`` are read for them too.
        """
        env = os.environ if environ is None else environ
        values = [env[name] for name in secret_env_names(env)]
        if settings is not None:
            for name in type(settings).model_fields:
                values.extend(_secret_values(getattr(settings, name, None)))
        for path in files:
            values.extend(_file_secrets(path))
        if settings is not None:
            values.extend(_stored_secrets(env))
        from ..config import credential_files

        for path in credential_files(settings, env):
            values.extend(_json_secrets(path))
        return cls(values)

    def __call__(self, text: str) -> str:
        return self.redact(text)

    def redact(self, text: str) -> str:
        """The text with every secret replaced."""
        if len(text) < _MIN_LITERAL:
            return text
        text = self.redact_literals(text)
        lowered = text.lower()
        if _ANY_TRIGGER.search(lowered) is None:
            return text
        for shape in _SHAPES:
            if any(t in lowered for t in shape.triggers):
                text = shape.pattern.sub(_replace, text)
                lowered = text.lower()
        return text

    def redact_literals(self, text: str) -> str:
        """The text with every known secret value replaced, shapes left alone.

        For text that is read as written, such as tool results: a key=value shape in code
        (``api_key = os.environ[...]``) must reach the model intact; a configured key not.
        """
        for secret in self.literals:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def is_clean(self, text: str) -> bool:
        """Whether ``redact`` would certainly leave the text as it is.

        True when no literal secret and no shape's trigger occurs in it. A text made by
        joining many values is clean only if every value is (each value's secrets and
        triggers are substrings of the join), so one test can clear a whole batch.
        """
        for secret in self.literals:
            if secret in text:
                return False
        return _ANY_TRIGGER.search(text.lower()) is None

    def redact_value(self, value: Any) -> Any:
        """Strings anywhere in a JSON-like value (dicts, lists, tuples) redacted."""
        return redact_value(value, self.redact)


def redact_value(value: Any, redact: Callable[[str], str]) -> Any:
    """Strings anywhere in a JSON-like value (dicts, lists, tuples) passed through ``redact``."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v, redact) for v in value)
    return value


def _replace(match: re.Match[str]) -> str:
    keep = match.groupdict().get("keep")
    return f"{keep}{REDACTED}" if keep else REDACTED
