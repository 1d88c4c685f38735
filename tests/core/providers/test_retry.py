"""The shared retry policy and Retry-After parsing, without any HTTP."""

from __future__ import annotations

import email.utils
import time

import pytest
from support.fake_llm_server import SleepRecorder

from greenroom.providers.errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderServerError,
    error_for_status,
)
from greenroom.providers.retry import RetryPolicy, call_with_retries, parse_retry_after


def test_backoff_doubles_up_to_the_cap_and_jitter_only_shortens() -> None:
    none = RetryPolicy(max_retries=10, random=lambda: 0.0)
    assert [none.backoff(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    most = RetryPolicy(max_retries=10, jitter=0.25, random=lambda: 1.0)
    assert most.backoff(0) == pytest.approx(0.375)


def test_delay_for() -> None:
    policy = RetryPolicy(max_retries=2, random=lambda: 0.0)
    busy = ProviderServerError("openai", "busy", status=503)
    assert policy.delay_for(busy, 0) == 0.5
    assert policy.delay_for(busy, 2) is None  # out of retries
    assert policy.delay_for(ProviderAuthError("openai", "bad key", status=401), 0) is None
    assert policy.delay_for(ProviderRateLimitError("openai", "x", status=429, retry_after=7), 0) == 7
    assert policy.delay_for(ProviderRateLimitError("openai", "x", status=429, retry_after=3600), 0) is None
    assert policy.delay_for(ProviderConnectionError("openai", "reset"), 1) == 1.0


def test_status_classes() -> None:
    assert type(error_for_status("x", 429, "")).__name__ == "ProviderRateLimitError"
    assert type(error_for_status("x", 529, "")).__name__ == "ProviderServerError"
    assert type(error_for_status("x", 408, "")).__name__ == "ProviderServerError"
    assert type(error_for_status("x", 403, "")).__name__ == "ProviderAuthError"
    assert type(error_for_status("x", 422, "")).__name__ == "ProviderRequestError"


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "12"}) == 12
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "1"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": future}) or 0) <= 31


@pytest.mark.anyio
async def test_call_with_retries_gives_up_with_the_attempt_count() -> None:
    sleeps = SleepRecorder()
    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        raise ProviderServerError("openai", "boom", status=502)

    with pytest.raises(ProviderServerError, match="after 4 attempts: boom") as info:
        await call_with_retries(attempt, RetryPolicy(max_retries=3, sleep=sleeps, random=lambda: 0.0))
    assert calls == 4 and info.value.attempts == 4
    assert sleeps.waits == [0.5, 1.0, 2.0]


@pytest.mark.anyio
async def test_other_exceptions_are_not_retried() -> None:
    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        raise KeyError("a bug, not a provider failure")

    with pytest.raises(KeyError):
        await call_with_retries(attempt, RetryPolicy(sleep=SleepRecorder()))
    assert calls == 1
