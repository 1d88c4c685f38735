"""What this process knows of each store's health: failed lately (left alone for
``RETRY_AFTER`` seconds), or answered lately (a readiness probe needs no query).

Kept for the process, not the runtime: every runtime a process builds pays one wait on a
down store, and every run, call and probe of the process reads the same answer.
"""

from __future__ import annotations

import threading
from time import monotonic

from greenroom_priors.store import StoreError

RETRY_AFTER = 30.0  # seconds a store that failed is left alone

# url -> (monotonic time before which it is not tried again, why it failed)
_DOWN: dict[str, tuple[float, str]] = {}
# url -> monotonic time it last answered
_UP: dict[str, float] = {}
_LOCK = threading.Lock()


def down_reason(url: str) -> str | None:
    """Why the store at ``url`` failed less than RETRY_AFTER seconds ago, else None."""
    with _LOCK:
        until, reason = _DOWN.get(url, (0.0, ""))
    return reason if monotonic() < until else None


def mark_down(url: str, exc: BaseException) -> None:
    with _LOCK:
        _DOWN[url] = (monotonic() + RETRY_AFTER, str(exc) or type(exc).__name__)
        _UP.pop(url, None)


def mark_up(url: str) -> None:
    with _LOCK:
        _DOWN.pop(url, None)
        _UP[url] = monotonic()


def answered_within(url: str, seconds: float) -> bool:
    """Whether the store at ``url`` answered in the last ``seconds`` (and has not failed since)."""
    with _LOCK:
        last = _UP.get(url)
    return last is not None and monotonic() - last <= seconds


def forget_down_stores() -> None:
    """Forget every failure and answer (tests; a process that knows its stores are back)."""
    with _LOCK:
        _DOWN.clear()
        _UP.clear()


def not_retried(reason: str) -> StoreError:
    return StoreError(f"{reason} (failed less than {RETRY_AFTER:g} s ago; not retried yet)")


__all__ = [
    "RETRY_AFTER",
    "answered_within",
    "down_reason",
    "forget_down_stores",
    "mark_down",
    "mark_up",
    "not_retried",
]
