"""Bounded retries with exponential backoff and jitter: ``RetryPolicy``, public as
``greenroom.RetryPolicy``, and the loop every ``ProviderModel`` runs its calls in.

The SDKs can retry on their own, but their loop is hidden: it cannot be told how to
sleep (so tests would wait for real), it retries before we can translate the error, and
the two SDKs differ. greenroom turns the SDK's retries off (``max_retries=0``) and runs
this one loop around each call, so every provider (a third-party one built on
``ProviderModel`` too) retries the same way:

- only errors that are ``retryable`` (429, 5xx, 408/409, connection errors, timeouts);
- at most ``max_retries`` extra attempts;
- the wait is ``base_delay * 2**n`` capped at ``max_delay``, minus up to ``jitter`` of it
  (so many clients hit by the same outage do not retry in lockstep);
- a ``Retry-After`` the provider sent is honoured exactly, unless it is longer than
  ``max_retry_after``: then waiting would stall the run, so the error is raised at once.

Cancellation is never caught: a cancelled scope stops the HTTP call or the sleep.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

import anyio
import attrs

from greenroom.providers.errors import ProviderError

log = logging.getLogger("greenroom.providers")

T = TypeVar("T")


@attrs.frozen
class RetryPolicy:
    """How a provider retries (a ``ProviderModel`` makes one from ``[model] max_retries``
    as ``model.retry``; replace it with ``attrs.evolve``). ``sleep`` and ``random`` are
    injectable, so a test waits for nothing."""

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = attrs.field(default=anyio.sleep, eq=False, repr=False)
    random: Callable[[], float] = attrs.field(default=random.random, eq=False, repr=False)

    def backoff(self, retry: int) -> float:
        """Seconds before retry number ``retry`` (0 for the first retry) with no hint."""
        delay = min(self.max_delay, self.base_delay * (2**retry))
        return delay * (1.0 - self.jitter * self.random())

    def delay_for(self, error: ProviderError, retry: int) -> float | None:
        """Seconds to wait before retrying ``error``, or None to give up now."""
        if not error.retryable or retry >= self.max_retries:
            return None
        if error.retry_after is not None:
            if error.retry_after > self.max_retry_after:
                return None
            return max(0.0, error.retry_after)
        return self.backoff(retry)


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
) -> T:
    """Run ``attempt`` until it succeeds or fails for good.

    ``attempt`` must raise ``ProviderError`` (already translated) for provider failures;
    anything else propagates unchanged on the first occurrence.
    """
    retry = 0
    while True:
        try:
            return await attempt()
        except ProviderError as exc:
            delay = next_retry(policy, exc, retry)
            if delay is None:
                raise
            retry += 1
            await policy.sleep(delay)


def next_retry(policy: RetryPolicy, error: ProviderError, retry: int) -> float | None:
    """The wait before retry number ``retry`` (0 for the first) of a call that failed with
    ``error``, logged as a warning; or None to give up, with the attempts recorded on the
    error. The one decision ``call_with_retries`` and a streamed call
    (``ProviderModel.stream``) both make."""
    delay = policy.delay_for(error, retry)
    if delay is None:
        error.with_attempts(retry + 1)
        return None
    log.warning("%s; retrying in %.2f s (retry %d of %d)", error, delay, retry + 1, policy.max_retries)
    return delay


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or an HTTP
    date, RFC 9110); None when absent or unreadable."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


__all__ = ["RetryPolicy", "call_with_retries", "next_retry", "parse_retry_after"]
