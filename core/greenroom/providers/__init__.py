"""Real model providers: ``openai`` (Chat Completions / Responses, and any
OpenAI-compatible server) and ``anthropic`` (Messages, with prompt-cache breakpoints).

Each is a plugin registered by entry point (``greenroom.providers.openai:OpenAIProvider``,
``greenroom.providers.anthropic:AnthropicProvider``) whose factory builds a
``greenroom.models.Model``. Importing this package imports no SDK; the SDK is loaded
when a model is built, and a missing one is reported with the extra to install.

Every failure is a ``greenroom.models.ModelError``; the ones from a provider call are
``ProviderError`` subclasses (see ``greenroom.providers.errors``) carrying the HTTP
status and the provider's own message. See docs/providers.md.
"""

from __future__ import annotations

from greenroom.providers._retry import RetryPolicy
from greenroom.providers.errors import (
    MissingApiKeyError,
    MissingExtraError,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderServerError,
    ProviderSetupError,
    ProviderTimeoutError,
)

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
    "RetryPolicy",
]
