"""Provider options from ``[model]`` (``ProviderOptions``, ``parse_provider_options``, both
public in ``greenroom``), API keys from the environment, the lazy SDK import.

Every provider reads the same common keys (``base_url``, ``api_key_env``, ``timeout``,
``max_retries``, ``temperature``, ``max_tokens``, ``extra_body``) and names its own in
``extra_keys``; an unknown key or a bad value is a ``ConfigError`` naming the key.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import attrs

from greenroom.config import ConfigError
from greenroom.providers.errors import (
    MissingApiKeyError,
    MissingExtraError,
)

DEFAULT_TIMEOUT = 120.0
"""Seconds one attempt may take. The SDKs default to 600 s, far too long for an agent
step to hang silently; a long generation can raise it with ``[model] timeout``."""

NO_KEY_PLACEHOLDER = "not-needed"
"""Sent as the key when ``api_key_env = ""`` (local servers that check no key); the SDK
refuses to start without some key."""


@attrs.frozen
class ProviderOptions:
    """The ``[model]`` table, checked. Provider-specific keys are in ``extra`` (with
    their defaults filled in; their values are for the provider to check)."""

    base_url: str | None = None
    api_key_env: str = ""
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = 2
    temperature: float | None = None
    max_tokens: int | None = None
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    extra: Mapping[str, Any] = attrs.field(factory=dict)


def _number(key: str, value: Any, *, minimum: float, integer: bool = False, exclusive: bool = False) -> Any:
    kind = "an integer" if integer else "a number"
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or not math.isfinite(value):
        raise ConfigError(f"expected {kind}, got {value!r}", path=f"model.{key}")
    if value < minimum or (exclusive and value == minimum):
        bound = f"> {minimum:g}" if exclusive else f">= {minimum:g}"
        raise ConfigError(f"expected {kind} {bound}, got {value!r}", path=f"model.{key}")
    return value


def parse_provider_options(
    provider: str,
    options: Mapping[str, Any],
    *,
    default_key_env: str,
    extra_keys: Mapping[str, Any] | None = None,
) -> ProviderOptions:
    """Check the ``[model]`` options; every problem names the key and what was expected.

    ``extra_keys`` are the provider-specific keys with their defaults (their values are
    checked by the provider).
    """
    extra_keys = extra_keys or {}
    known = {
        "base_dir",  # added by greenroom.compose.build, not a user key
        "base_url",
        "api_key_env",
        "timeout",
        "max_retries",
        "temperature",
        "max_tokens",
        "extra_body",
        *extra_keys,
    }
    if "api_key" in options:
        # keys in config files end up in version control; DESIGN.md section 8
        raise ConfigError(
            "API keys are never read from config files; put the key in an environment variable "
            f'(default {default_key_env}) and, for another name, set api_key_env = "NAME"',
            path="model.api_key",
        )
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(
            f"unknown option(s) for the {provider} provider: {', '.join(unknown)} "
            f"(known: {', '.join(sorted(known - {'base_dir'}))})",
            path=f"model.{unknown[0]}",
        )
    base_url = options.get("base_url")
    if base_url is not None and (not isinstance(base_url, str) or not base_url.strip()):
        raise ConfigError(f"expected a URL string, got {base_url!r}", path="model.base_url")
    key_env = options.get("api_key_env", default_key_env)
    if not isinstance(key_env, str):
        raise ConfigError(f"expected the name of an environment variable, got {key_env!r}", path="model.api_key_env")
    extra_body = options.get("extra_body", {})
    if not isinstance(extra_body, Mapping):
        raise ConfigError(f"expected a table, got {extra_body!r}", path="model.extra_body")
    temperature = options.get("temperature")
    max_tokens = options.get("max_tokens")
    return ProviderOptions(
        base_url=base_url,
        api_key_env=key_env,
        timeout=float(_number("timeout", options.get("timeout", DEFAULT_TIMEOUT), minimum=0, exclusive=True)),
        max_retries=_number("max_retries", options.get("max_retries", 2), minimum=0, integer=True),
        temperature=None if temperature is None else float(_number("temperature", temperature, minimum=0)),
        max_tokens=None if max_tokens is None else _number("max_tokens", max_tokens, minimum=1, integer=True),
        extra_body=dict(extra_body),
        extra={k: options.get(k, default) for k, default in extra_keys.items()},
    )


def missing_sdk(module: str, extra: str, provider: str) -> str | None:
    """Why ``provider`` cannot build a model here (its SDK is not installed), or None.
    Asked without importing the SDK, so ``greenroom plugins`` stays fast."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or blocked package is as good as missing
        found = False
    if found:
        return None
    return f"the {provider} provider needs the {module!r} package: pip install 'greenroom[{extra}]'"


def import_sdk(module: str, extra: str, provider: str) -> ModuleType:
    """Import a provider SDK, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"the {provider} provider needs the {module!r} package, which is not installed "
            f"({exc}); install it with: pip install 'greenroom[{extra}]'"
        ) from None


def api_key(provider: str, env_name: str) -> str:
    """The key from the environment (never from a file); a clear error when missing."""
    if env_name == "":
        return NO_KEY_PLACEHOLDER
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise MissingApiKeyError(
            f"{provider}: no API key: the environment variable {env_name} is not set (or empty). "
            f"Set it, e.g. export {env_name}=..., or name another variable with "
            # no "[model]" here: the CLI prints through rich, which takes it for markup
            'api_key_env = "NAME" in the model table (api_key_env = "" for a local server that needs no key)'
        )
    return value


__all__ = [
    "DEFAULT_TIMEOUT",
    "NO_KEY_PLACEHOLDER",
    "ProviderOptions",
    "api_key",
    "import_sdk",
    "missing_sdk",
    "parse_provider_options",
]
