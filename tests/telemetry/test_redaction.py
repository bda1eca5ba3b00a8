"""Redaction: the redactor itself, the redacting publisher, and secrets planted in a real
kernel's settings and environment never reaching spans, the audit log, any file under the
user directory, or the cell outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from co_kernel.config import Settings
from co_kernel.frontend import RedactingPublisher
from co_kernel.telemetry import REDACTED, AuditEvent, AuditLog, Redactor

from ..support.redaction import redact_bytes
from .span_reader import telemetry_db, turns_done, wait_for_spans

# -- the redactor ------------------------------------------------------------------


def test_known_values_and_shapes_are_redacted() -> None:
    r = Redactor(["my-literal-secret-123"])
    assert r.redact("key my-literal-secret-123 here") == f"key {REDACTED} here"
    assert r.redact("Authorization: Bearer abc.def-123") == f"Authorization: {REDACTED}"
    assert r.redact('{"authorization": "Basic dXNlcjpwYXNz"}') == (
        f'{{"authorization": "{REDACTED}"}}'
    )
    assert r.redact("curl -H 'x' bearer eyJhbGciOiJIUzI1NiJ9.e30.sig") == (
        f"curl -H 'x' bearer {REDACTED}"
    )
    assert r.redact("https://x.example/v1?api_key=zzzz9999&q=1") == (
        f"https://x.example/v1?api_key={REDACTED}&q=1"
    )
    assert r.redact('"client_secret": "GOCSPX-abcdef"') == f'"client_secret": "{REDACTED}"'
    for token in (
        "sk-proj-ABCDEFGHIJKLMNOPQRSTuv",
        "sk-ant-api03-abcdefghijklmnop",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "ya29.a0AfH6SMBx-long-oauth-token",
        "1//0gLongRefreshTokenValue_abcdefghij",
        "xoxb-1234567890-abcdefghij",
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "glpat-abcdefghijklmnop1234",
    ):
        assert r.redact(f"token: {token} end").count(token) == 0, token


def test_ordinary_text_is_left_alone() -> None:
    r = Redactor(["short", "x"])  # too short to be replaced blindly
    for text in (
        "Bearer tokens are sent in the Authorization header.",
        '{"gen_ai.usage.input_tokens": 50, "max_tokens_per_turn": 5}',
        "The password policy needs twelve characters.",
        "short answers are fine",
        "sk-learn is a library",
    ):
        assert r.redact(text) == text


def test_settings_environment_and_files_supply_the_secrets(tmp_path: Path) -> None:
    settings = Settings(api_key=SecretStr("settings-secret-1"), model="compat:x")
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps({"api_key": "overridden-file-secret", "model": "m"}))
    env = {"GEMINI_API_KEY": "env-gemini-secret", "MY_SERVICE_TOKEN": "env-token-secret"}
    env["HOME"] = "/home/someone"
    r = Redactor.from_settings(settings, environ=env, files=[settings_file])
    text = (
        "settings-secret-1 env-gemini-secret env-token-secret overridden-file-secret "
        "/home/someone compat:x"
    )
    assert r.redact(text) == f"{REDACTED} {REDACTED} {REDACTED} {REDACTED} /home/someone compat:x"


def test_nested_values_are_redacted() -> None:
    r = Redactor(["nested-secret-value"])
    value = {"a": ["ok", {"b": "x nested-secret-value y"}], "n": 3}
    assert r.redact_value(value) == {"a": ["ok", {"b": f"x {REDACTED} y"}], "n": 3}


@given(
    before=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40),
    after=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40),
)
def test_a_known_secret_never_survives(before: str, after: str) -> None:
    secret = "Zq9-known-secret-Xy7"
    assert secret not in Redactor([secret]).redact(f"{before}{secret}{after}")


def test_audit_rows_are_redacted(tmp_path: Path) -> None:
    redactor = Redactor(["audit-secret-value"])
    log = AuditLog(tmp_path / "t.db", redact=redactor.redact)
    log.record(
        AuditEvent(
            session_id="s",
            tool="web_fetch",
            decision="approved",
            target="https://api.example/?token=audit-secret-value",
            detail="Authorization: Bearer abc123def456",
        )
    )
    (row,) = log.query()
    assert "audit-secret-value" not in row["target"] and REDACTED in row["target"]
    assert row["detail"] == f"Authorization: {REDACTED}"
    log.close()


# -- the redacting publisher ---------------------------------------------------------


class _Collect:
    """A Publisher that keeps what it is given."""

    def __init__(self) -> None:
        self.streams: list[tuple[str, str]] = []
        self.displays: list[dict[str, Any]] = []
        self.errors: list[tuple[str, str, list[str]]] = []

    def display(self, data, metadata=None, *, display_id=None, update=False) -> None:
        self.displays.append(data)

    def stream(self, name: str, text: str) -> None:
        self.streams.append((name, text))

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        self.errors.append((ename, evalue, traceback))

    def flush(self) -> None:
        pass


def test_an_error_output_is_redacted_after_the_held_stream_text() -> None:
    secret = "sk-error-secret-0123456789"
    sink = _Collect()
    pub = RedactingPublisher(sink, Redactor([secret]).redact)
    pub.stream("stdout", "partial words held")
    pub.error("MagicError", f"bad key {secret}", [f"bad key {secret}", "second line"])
    assert "".join(t for _, t in sink.streams) == "partial words held"
    assert sink.errors == [
        ("MagicError", "bad key [REDACTED]", ["bad key [REDACTED]", "second line"])
    ]


@given(cuts=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=40))
def test_a_secret_split_across_stream_writes_is_still_redacted(cuts: list[int]) -> None:
    secret = "sk-split-secret-0123456789"
    text = f"Use Authorization: Bearer tok{secret[:5]}99 and then {secret} please.\nDone."
    sink = _Collect()
    pub = RedactingPublisher(sink, Redactor([secret]).redact)
    pos = 0
    for cut in cuts * 20:
        if pos >= len(text):
            break
        pub.stream("stdout", text[pos : pos + cut])
        pos += cut
    if pos < len(text):
        pub.stream("stdout", text[pos:])
    pub.drain()
    shown = "".join(t for _, t in sink.streams)
    assert secret not in shown
    assert "toksk-sp99" not in shown
    assert shown == f"Use Authorization: {REDACTED} and then {REDACTED} please.\nDone."


def test_display_data_is_redacted_whole() -> None:
    sink = _Collect()
    pub = RedactingPublisher(sink, Redactor(["display-secret-42"]).redact)
    pub.display(
        {"text/markdown": "a display-secret-42 b", "application/json": {"k": ["display-secret-42"]}}
    )
    # Markdown leaves rendered (and scrubbed again: a placeholder shows a URL decoded).
    assert sink.displays == [
        {
            "text/html": f'<div class="co-markdown"><p>a {REDACTED} b</p>\n</div>',
            "application/json": {"k": [REDACTED]},
        }
    ]


# -- a real kernel with planted secrets ------------------------------------------------

S_FILE = "co-file-secret-7f3a9c21e4"
S_CO = "sk-co-env-secret-5b8d2e6f0a91"
S_GEMINI = "AIzaSyPlantedGeminiKey0123456789abcdefg"
S_TOKEN = "svc-token-3c7e1a9b5d"
S_BEARER = "eyJplantedBearer.4d2f8a6c0e"
SECRETS = (S_FILE, S_CO, S_GEMINI, S_TOKEN, S_BEARER)


def _iopub_outputs(results) -> str:
    """Everything the cells showed or replied (the echo of the cell's own code aside)."""
    shown = []
    for result in results:
        for m in result.messages:
            if m["msg_type"] != "execute_input":
                shown.append(json.dumps(m["content"], ensure_ascii=False))
        shown.append(json.dumps(result.reply["content"], ensure_ascii=False))
    return "\n".join(shown)


def test_planted_secrets_reach_no_span_row_file_or_output(
    start_kernel, model_server, co_home: Path, workspace: Path
):
    (workspace / ".co").mkdir()
    (workspace / ".co" / "settings.json").write_text(json.dumps({"api_key": S_FILE}))
    kernel = start_kernel(
        {"CO_API_KEY": S_CO, "GEMINI_API_KEY": S_GEMINI, "MY_SERVICE_TOKEN": S_TOKEN}
    )
    echo = f"Keys: {S_CO}, {S_GEMINI}, {S_TOKEN}, {S_FILE}; header Authorization: Bearer {S_BEARER}"
    model_server.extend(
        [
            # A failing request whose error body echoes the key it was sent.
            {
                "fault": {
                    "status": 401,
                    "body": {"error": {"message": f"Incorrect API key: {S_CO} ({S_GEMINI})"}},
                }
            },
            # A succeeding turn that calls a tool with a secret in its arguments, then echoes.
            {
                "tool_calls": [
                    {
                        "name": "fetch_url",
                        "arguments": {"url": f"https://api.example/?key={S_GEMINI}"},
                    }
                ]
            },
            {"text": echo},
            # The console streams the echo in small pieces.
            {"text": echo, "tokens_per_second": 400},
            {
                "fault": {
                    "status": 400,
                    "body": {"error": {"message": f"bad request with {S_TOKEN}"}},
                }
            },
            {"text": "Corrected."},
        ]
    )
    results = [
        kernel.execute("first try"),
        kernel.execute(f"Call it with Authorization: Bearer {S_BEARER} and {S_FILE}"),
        kernel.execute("again, in the console", mode="console"),
        kernel.execute("and a bad request", mode="headless"),
    ]
    assert results[0].status == "error" and results[1].status == "ok"
    assert model_server.errors == []
    # The secrets were really in play: the key went to the server, the prompt carried the bearer.
    assert any(S_BEARER in json.dumps(r["messages"]) for r in model_server.requests)

    spans = wait_for_spans(telemetry_db(co_home), turns_done(4))
    assert len(spans) >= 10
    kernel.shutdown()

    outputs = _iopub_outputs(results)
    assert REDACTED in outputs, "the echoes were shown, redacted"
    for secret in SECRETS:
        assert secret not in outputs, f"{secret} in a cell output"
    files = [p for p in co_home.rglob("*") if p.is_file()]
    assert telemetry_db(co_home) in files
    sessions = co_home / "data" / "sessions.db"
    assert sessions in files, "the saved sessions are scanned too"
    assert b"Call it with Authorization: [REDACTED]" in sessions.read_bytes()
    stored = b"".join(p.read_bytes() for p in files)
    assert REDACTED.encode() in stored
    for secret in SECRETS:
        assert secret.encode() not in stored, f"{secret} stored under {co_home}"


def test_serialised_messages_are_redacted_as_bytes() -> None:
    r = Redactor(["stored-secret-9876"])
    data = '{"parts":[{"content":"use stored-secret-9876 and Authorization: Bearer ab12cd34ef"}]}'
    clean = redact_bytes(r, data.encode())
    assert b"stored-secret-9876" not in clean and b"ab12cd34ef" not in clean
    assert redact_bytes(r, b'{"parts":[]}') == b'{"parts":[]}'


def test_oauth_token_files_supply_their_tokens(tmp_path: Path) -> None:
    token_file = tmp_path / "google_token.json"
    token_file.write_text(
        json.dumps(
            {
                "token": "oauth-access-4f8e2a",
                "refresh_token": "oauth-refresh-9d1c7b",
                "client_id": "co-test.apps.googleusercontent.com",
                "client_secret": "oauth-client-secret-3e5a",
            }
        )
    )
    adc = tmp_path / "adc.json"
    adc.write_text(json.dumps({"type": "service_account", "private_key": "-----BEGIN KEY-----x"}))
    settings = Settings(google_token_path=token_file)
    r = Redactor.from_settings(settings, environ={"GOOGLE_APPLICATION_CREDENTIALS": str(adc)})
    text = "oauth-access-4f8e2a oauth-refresh-9d1c7b oauth-client-secret-3e5a -----BEGIN KEY-----x"
    assert r.redact(text) == " ".join([REDACTED] * 4)
    assert r.redact("co-test.apps.googleusercontent.com") == "co-test.apps.googleusercontent.com"
