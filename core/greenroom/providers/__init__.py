"""The provider API: what a model provider is built from, and the offline ``scripted`` one.

A provider is a plugin whose ``greenroom_model_providers`` hook maps a prefix to a
factory building a ``greenroom.models.Model``. The ones that call a vendor's API are
first-party plugins (``plugins/``: OpenAI's Chat Completions and Responses, Anthropic's
Messages, Gemini), built on this API like a third-party one; importing this package
imports no SDK, and a missing one is reported with the extra to install.

``base`` holds ``ProviderModel``, the class a provider subclasses, ``_sdk``
``SDKModel`` (a ``ProviderModel`` over an official SDK), ``options`` the ``[model]``
table it reads, ``retry`` its retry policy, ``_messages`` what the providers share
about the history. Every failure is a ``greenroom.models.ModelError``; the ones from a
provider call are ``ProviderError`` subclasses (``errors``) carrying the HTTP status
and the provider's own message. See docs/providers.md ("Writing a provider"). Names
load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenroom._support.lazy import lazy_exports

if TYPE_CHECKING:
    from greenroom.providers._sdk import SDKModel as SDKModel
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
    "SDKModel": "greenroom.providers._sdk",
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
