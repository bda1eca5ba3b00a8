"""classify_provider_error and backoff_delay on the exceptions pydantic-ai 2.x raises.

The fault matrix checks the same policy end to end through a kernel; these pin the parts
a scripted server cannot reach cheaply: HTTP-date Retry-After, the doubling and the cap,
quota and context-window errors, other providers' key names.
"""

from __future__ import annotations

import email.utils
import time

import pytest
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelServerError,
    ModelTimeoutError,
)

from co_kernel.models._provider_errors import (
    ErrorAction,
    ProviderErrorKind,
    backoff_delay,
    classify_provider_error,
    parse_retry_after,
)


def classify(exc: BaseException, provider: str = "compat") -> ErrorAction:
    action = classify_provider_error(exc, provider=provider, model=f"{provider}:m")
    assert action is not None
    return action


def http(status: int, body: object = None, headers: dict[str, str] | None = None) -> ModelHTTPError:
    return ModelHTTPError(status, "m", body, headers=headers)


def test_400_reflects_with_the_providers_words() -> None:
    action = classify(
        http(400, {"message": "messages[3].content is empty", "type": "invalid_request_error"})
    )
    assert action.kind is ProviderErrorKind.REFLECT
    assert action.body == "messages[3].content is empty (invalid_request_error)"
    assert classify(http(400, "plain text complaint")).body == "plain text complaint"
    assert classify(http(400, {"error": {"message": "nested"}})).body == "nested"


@pytest.mark.parametrize(
    ("provider", "key"),
    [
        ("gemini", "GEMINI_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("compat", "CO_API_KEY"),
    ],
)
def test_auth_failures_abort_naming_the_key(provider: str, key: str) -> None:
    for status in (401, 403):
        action = classify(http(status, {"message": "nope"}), provider)
        assert action.kind is ProviderErrorKind.ABORT
        assert (
            key in action.message
            and f"HTTP {status}" in action.message
            and "%model" in action.message
        )


def test_404_names_the_model_and_the_magic() -> None:
    action = classify(http(404, {"message": "no such model"}), "openai")
    assert action.kind is ProviderErrorKind.ABORT
    assert "`openai:m`" in action.message and "%model" in action.message


def test_retry_after_in_seconds_and_as_an_http_date() -> None:
    assert classify(http(429, headers={"Retry-After": "7"})).retry_after == 7
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    after = classify(http(429, headers={"Retry-After": when})).retry_after
    assert after is not None and 15 < after <= 20
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0, "a past date means now"
    assert parse_retry_after("soon") is None


def test_rate_limit_without_retry_after_waits_3_s_then_doubles() -> None:
    action = classify(
        ModelHTTPError.for_category(ModelRateLimitError, status_code=429, model_name="m")
    )
    assert action.kind is ProviderErrorKind.BACKOFF and action.retry_after is None
    assert [backoff_delay(action, n) for n in (1, 2, 3)] == [3.0, 6.0, 12.0]


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    assert backoff_delay(classify(http(429, headers={"Retry-After": "12"})), 1) == 12
    assert backoff_delay(classify(http(429, headers={"Retry-After": "3600"})), 1) == 30
    assert backoff_delay(classify(http(429, headers={"Retry-After": "12"})), 1, cap=5) == 5


@pytest.mark.parametrize("status", [500, 502, 503, 504, 408])
def test_server_errors_back_off_exponentially_from_2_s_capped_at_30(status: int) -> None:
    action = classify(http(status))
    assert action.kind is ProviderErrorKind.BACKOFF
    assert [backoff_delay(action, n) for n in range(1, 7)] == [2, 4, 8, 16, 30, 30]
    assert [backoff_delay(action, n, base=0.5, cap=1) for n in (1, 2, 3)] == [0.5, 1, 1]


def test_network_failures_back_off_and_say_what_happened() -> None:
    refused = classify(ModelConnectionError("m", "Connection error.", phase="connect"))
    dropped = classify(ModelConnectionError("m", "Connection error.", phase="read"))
    timed_out = classify(ModelTimeoutError("m", "Request timed out.", phase="read"))
    garbled = classify(ModelAPIError("m", "Failed to decode response as JSON"))
    unavailable = classify(ModelServerError("m", "overloaded"))
    assert all(
        a.kind is ProviderErrorKind.BACKOFF
        for a in (refused, dropped, timed_out, garbled, unavailable)
    )
    assert refused.message.startswith("Could not reach")
    assert dropped.message.startswith("Lost the connection")
    assert "request_timeout" in timed_out.message
    assert "could not read" in garbled.message


def test_quota_and_context_window_abort_with_the_fix() -> None:
    quota = classify(
        ModelHTTPError.for_category(ModelQuotaExceededError, status_code=429, model_name="m")
    )
    assert quota.kind is ProviderErrorKind.ABORT and "billing" in quota.message
    too_long = classify(
        ModelHTTPError.for_category(
            ModelContextWindowExceededError, status_code=400, model_name="m"
        )
    )
    assert too_long.kind is ProviderErrorKind.ABORT and "context window" in too_long.message


def test_other_errors_are_not_provider_errors() -> None:
    assert classify_provider_error(ValueError("x"), provider="compat", model="m") is None
