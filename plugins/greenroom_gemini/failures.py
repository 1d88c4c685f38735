"""What the SDK raises -> the ``ProviderError`` greenroom raises (and maybe retries).

- ``google.genai.errors.APIError`` (``ClientError`` for 4xx, ``ServerError`` for 5xx,
  also raised for an ``{"error": ...}`` event in a stream): its ``code`` picks the class
  as any HTTP status would (429 and 5xx are retried), its message and status
  (``RESOURCE_EXHAUSTED``) are the detail, and the wait a 429 asks for is read from
  ``Retry-After`` or from the error's ``RetryInfo`` detail (``"retryDelay": "13s"``);
- ``UnknownApiResponseError`` (an event that is not JSON): an unusable response;
- an answer nested too deeply for Python's JSON reader (arguments a model nested past
  about 1,000 levels): a malformed call, so the model is asked again;
- the transport's own errors (``httpx`` / ``httpx2``, or ``aiohttp`` where the SDK uses
  it): a read that waited too long is a timeout, a refused, reset or cut connection a
  connection error; both are retried.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from greenroom import (
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    ProviderTimeoutError,
    ProviderToolCallError,
    error_for_status,
    parse_retry_after,
)
from greenroom.kit import error_endpoint

PROVIDER = "gemini"

_STATUS = re.compile(r"[A-Z][A-Z_]+")
"""An API status (``RESOURCE_EXHAUSTED``), not an HTTP reason phrase."""

_DELAY = re.compile(r"(\d+(?:\.\d+)?)s")


def translate(exc: Exception, sdk: Any, model: str, timeout: float) -> ProviderError | None:
    """The ``ProviderError`` for ``exc``, or None when it is not one the SDK names."""
    errors = sdk.errors
    where = error_endpoint(exc)
    if isinstance(exc, errors.APIError):
        code = exc.code if isinstance(exc.code, int) and not isinstance(exc.code, bool) else 500
        return error_for_status(
            PROVIDER,
            code,
            detail(exc),
            retry_after=retry_after(exc),
            model=model,
            endpoint=where,
        )
    if isinstance(exc, RecursionError):
        return too_deep(model)
    if isinstance(exc, getattr(errors, "UnknownApiResponseError", ())):
        return ProviderResponseError(PROVIDER, str(exc)[:500], model=model, endpoint=where)
    if _is(exc, ("httpx", "httpx2"), "TimeoutException"):
        return ProviderTimeoutError(PROVIDER, f"no answer within {timeout:g} s", model=model, endpoint=where)
    if _is(exc, ("httpx", "httpx2"), "TransportError") or _is(exc, ("aiohttp",), "ClientError"):
        return ProviderConnectionError(PROVIDER, f"{type(exc).__name__}: {exc}", model=model, endpoint=where)
    return None


def too_deep(model: str) -> ProviderToolCallError:
    """An answer that cannot be read: nested past the recursion limit (``RecursionError``)."""
    return ProviderToolCallError(
        PROVIDER, "the answer is nested too deeply to read (a function call's arguments, most likely)", model=model
    )


def detail(exc: Any) -> str:
    """The API's message and status (``... (RESOURCE_EXHAUSTED)``), or what the body said."""
    message = exc.message if isinstance(exc.message, str) and exc.message else None
    status = exc.status if isinstance(exc.status, str) and _STATUS.fullmatch(exc.status) else None
    if message is None:
        text = exc.details if isinstance(exc.details, str) else repr(exc.details)
        message = text.strip()[:500] or f"HTTP {exc.code}"
    return f"{message} ({status})" if status else message


def retry_after(exc: Any) -> float | None:
    """The wait the error asks for: ``Retry-After``, else its ``RetryInfo.retryDelay``."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    try:
        waited = parse_retry_after(dict(headers)) if headers is not None else None
    except (TypeError, ValueError):
        waited = None
    if waited is not None:
        return waited
    body = exc.details
    error = body.get("error", body) if isinstance(body, Mapping) else None
    for item in error.get("details", ()) if isinstance(error, Mapping) else ():
        if isinstance(item, Mapping) and str(item.get("@type", "")).endswith("RetryInfo"):
            match = _DELAY.fullmatch(str(item.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def _is(exc: Exception, modules: tuple[str, ...], name: str) -> bool:
    """Whether ``exc`` is of the class ``name`` of one of ``modules`` (by its MRO: the
    transports are the SDK's to import, not greenroom's)."""
    return any(c.__name__ == name and c.__module__.split(".")[0] in modules for c in type(exc).__mro__)


__all__ = ["detail", "retry_after", "too_deep", "translate"]
