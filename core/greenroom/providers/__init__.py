"""Model providers: ``scripted`` (offline), ``openai`` (Chat Completions / Responses, and
any OpenAI-compatible server) and ``anthropic`` (Messages, with prompt-cache breakpoints),
and what a third-party provider is built from.

Each provider is a plugin registered by entry point (``greenroom.providers.openai:
OpenAIProvider``, ``greenroom.providers.anthropic:AnthropicProvider``) whose factory
builds a ``greenroom.models.Model``. Importing this package imports no SDK; the SDK is
loaded when a model is built, and a missing one is reported with the extra to install.

``base`` holds ``ProviderModel``, the class a provider subclasses, ``options`` the
``[model]`` table it reads, ``retry`` its retry policy; the built-in providers are
built on them too (through ``_sdk``). Every failure is a ``greenroom.models.ModelError``;
the ones from a provider call are ``ProviderError`` subclasses (``errors``) carrying the
HTTP status and the provider's own message. See docs/providers.md ("Writing a provider").
Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenroom._support.lazy import lazy_exports

if TYPE_CHECKING:
    from greenroom.providers.base import ProviderModel as ProviderModel
    from greenroom.providers.errors import MissingApiKeyError as MissingApiKeyError
    from greenroom.providers.errors import MissingExtraError as MissingExtraError
    from greenroom.providers.errors import ProviderAuthError as ProviderAuthError
    from greenroom.providers.errors import ProviderConnectionError as ProviderConnectionError
    from greenroom.providers.errors import ProviderError as ProviderError
    from greenroom.providers.errors import ProviderRateLimitError as ProviderRateLimitError
    from greenroom.providers.errors import ProviderRequestError as ProviderRequestError
    from greenroom.providers.errors import ProviderResponseError as ProviderResponseError
    from greenroom.providers.errors import ProviderServerError as ProviderServerError
    from greenroom.providers.errors import ProviderSetupError as ProviderSetupError
    from greenroom.providers.errors import ProviderTimeoutError as ProviderTimeoutError
    from greenroom.providers.errors import ProviderToolCallError as ProviderToolCallError
    from greenroom.providers.errors import error_for_status as error_for_status
    from greenroom.providers.options import ProviderOptions as ProviderOptions
    from greenroom.providers.options import parse_provider_options as parse_provider_options
    from greenroom.providers.retry import RetryPolicy as RetryPolicy
    from greenroom.providers.retry import parse_retry_after as parse_retry_after

_EXPORTS: dict[str, str] = {
    "ProviderModel": "greenroom.providers.base",
    "MissingApiKeyError": "greenroom.providers.errors",
    "MissingExtraError": "greenroom.providers.errors",
    "ProviderAuthError": "greenroom.providers.errors",
    "ProviderConnectionError": "greenroom.providers.errors",
    "ProviderError": "greenroom.providers.errors",
    "ProviderRateLimitError": "greenroom.providers.errors",
    "ProviderRequestError": "greenroom.providers.errors",
    "ProviderResponseError": "greenroom.providers.errors",
    "ProviderServerError": "greenroom.providers.errors",
    "ProviderSetupError": "greenroom.providers.errors",
    "ProviderTimeoutError": "greenroom.providers.errors",
    "ProviderToolCallError": "greenroom.providers.errors",
    "error_for_status": "greenroom.providers.errors",
    "ProviderOptions": "greenroom.providers.options",
    "parse_provider_options": "greenroom.providers.options",
    "RetryPolicy": "greenroom.providers.retry",
    "parse_retry_after": "greenroom.providers.retry",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
