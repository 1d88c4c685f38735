"""The errors a real provider raises, all of them ``greenroom.models.ModelError``.

An SDK exception never leaves a provider: each one is translated into one of these, with
the provider's name, the HTTP status (when there was a response), the provider's own
message (with the configured key and other known secrets masked) and whether a retry
could help. Callers catch ``ModelError`` (everything) or a subclass here (for example
``ProviderRateLimitError`` to back off at a higher level).
"""

from __future__ import annotations

from collections.abc import Callable

from greenroom.models import ModelError


class ProviderError(ModelError):
    """A provider call failed.

    Attributes:
        provider: The provider's name, the prefix of ``PROVIDER:MODEL``.
        status: The HTTP status, or None when no response arrived.
        detail: The provider's own message (``error.message`` of the body) or the
            transport's description.
        retryable: Whether the same request could succeed later (429, 5xx, network).
        retry_after: Seconds the provider asked us to wait (``Retry-After``), if it did.
        attempts: How many attempts were made before giving up (set by the retry loop).
    """

    retryable: bool = False
    kind = "request failed"  # what went wrong when there is no HTTP status to show

    def __init__(
        self,
        provider: str,
        detail: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        model: str = "",
        endpoint: str = "",
    ) -> None:
        self.provider = provider
        self.detail = detail
        self.status = status
        self.retry_after = retry_after
        self.model = model
        self.endpoint = endpoint
        self.attempts = 1
        super().__init__(self._render())

    def _render(self) -> str:
        who = f"{self.provider}:{self.model}" if self.model else self.provider
        if self.status is not None:
            what, where = f"HTTP {self.status}", f" from {self.endpoint}" if self.endpoint else ""
        else:
            what, where = self.kind, f" calling {self.endpoint}" if self.endpoint else ""
        tries = f" after {self.attempts} attempts" if self.attempts > 1 else ""
        return f"{who}: {what}{where}{tries}: {self.detail}"

    def with_attempts(self, attempts: int) -> ProviderError:
        """Record how many attempts were made and refresh the message."""
        self.attempts = attempts
        self.args = (self._render(),)
        return self

    def after_text(self) -> ProviderError:
        """Mark the error of a stream that broke after some of its text was yielded: not
        retried (another attempt would write a second answer after the start of the
        first), and the message says so."""
        self.retryable = False
        self.detail = f"{self.detail} (the stream broke after text was shown; not retried)"
        self.args = (self._render(),)
        return self

    def redacted(self, redact: Callable[[str], str]) -> ProviderError:
        """Hide secrets in what the provider sent (its message may echo the API key) and
        refresh the message; the error keeps its class, status and retry hints."""
        self.detail = redact(self.detail)
        self.endpoint = redact(self.endpoint)
        self.args = (self._render(),)
        return self


class ProviderRateLimitError(ProviderError):
    """HTTP 429: too many requests or tokens for the account's limits."""

    retryable = True


class ProviderServerError(ProviderError):
    """HTTP 5xx (including Anthropic's 529 "overloaded"), or 408 / 409 the providers
    document as transient."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """No HTTP response: DNS, refused connection, reset, TLS failure."""

    retryable = True
    kind = "connection failed"


class ProviderTimeoutError(ProviderConnectionError):
    """No complete answer within the configured ``timeout``."""

    kind = "timed out"

    def stalled(self) -> ProviderTimeoutError:
        """Mark a timeout that came after a stream began: its events stopped coming."""
        if not self.detail.startswith("the stream stalled"):
            self.detail = f"the stream stalled: {self.detail}"
            self.args = (self._render(),)
        return self


class ProviderAuthError(ProviderError):
    """HTTP 401 / 403: the key is wrong, revoked or lacks permission."""


class ProviderRequestError(ProviderError):
    """Another 4xx: the provider rejected the request (unknown model, bad schema, context
    too long). Retrying the same request cannot help."""


class ProviderResponseError(ProviderError):
    """A 2xx answer greenroom cannot use (no choices, not JSON, wrong shape)."""

    kind = "unusable response"


class ProviderToolCallError(ProviderResponseError):
    """The model asked for a tool call that cannot be run or even answered: no function
    (``"function": null``), no name, a kind of call greenroom never offered. Retried like
    a failed request: the model is asked the same again (a sampled answer differs), and
    when every attempt gives such a call the run ends with this error, never with an
    empty answer. (Arguments that are not JSON are not this: the run answers them with
    an error result the model reads.)"""

    retryable = True
    kind = "malformed tool call"


class ProviderSetupError(ModelError):
    """The provider cannot be used as configured (missing extra, missing key)."""


class MissingExtraError(ProviderSetupError):
    """The provider's SDK is not installed."""


class MissingApiKeyError(ProviderSetupError):
    """The environment variable that should hold the API key is unset or empty."""


def error_for_status(
    provider: str,
    status: int,
    detail: str,
    *,
    retry_after: float | None = None,
    model: str = "",
    endpoint: str = "",
) -> ProviderError:
    """The error class that matches an HTTP status."""
    cls: type[ProviderError]
    if status == 429:
        cls = ProviderRateLimitError
    elif status >= 500 or status in (408, 409):
        # 408 and 409 (lock contention) are retried by both official SDKs too
        cls = ProviderServerError
    elif status in (401, 403):
        cls = ProviderAuthError
    else:
        cls = ProviderRequestError
    return cls(provider, detail, status=status, retry_after=retry_after, model=model, endpoint=endpoint)


__all__ = [
    "MissingApiKeyError",
    "MissingExtraError",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "ProviderServerError",
    "ProviderSetupError",
    "ProviderTimeoutError",
    "ProviderToolCallError",
    "error_for_status",
]
