"""The OpenAI provider's own ``[model]`` keys, checked into ``OpenAISettings``, and what
each model family can take.

``api`` (``"chat"`` or ``"responses"``); then six switches, each ``"auto"`` (the
default), ``true`` or ``false``: ``images`` (tool results' images go to the model),
``audio`` (their sounds, Chat Completions only), ``strict_tools`` (``strict: true`` on
the tools whose schema allows it), ``tool_search`` (deferred tools behind the API's
``tool_search``, answered by greenroom's own search; Responses only),
``reasoning_items`` (reasoning items kept with their encrypted content and sent back;
Responses only) and ``programmatic`` (tools called from the model's JavaScript in
OpenAI's runtime, ``programmatic``; Responses only, and off under ``auto``: which models
take it is not known here, so it is turned on by name). ``auto`` decides by the model's
family on OpenAI's own API; on any other server (``base_url`` pointing elsewhere) it is
false, since a compatible server may reject what it does not implement. ``true`` for a
feature the API cannot carry (``tool_search`` with ``api = "chat"``) is a ``ConfigError``
naming the key.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import attrs

from greenroom import ConfigError, ProviderOptions

APIS = ("chat", "responses")
SWITCHES = ("images", "audio", "strict_tools", "tool_search", "reasoning_items", "programmatic")

EXTRA_KEYS: dict[str, Any] = {"api": "chat", **dict.fromkeys(SWITCHES, "auto")}
"""The provider's own keys and their defaults (``parse_provider_options``' ``extra_keys``)."""

RESPONSES_ONLY = ("tool_search", "reasoning_items", "programmatic")
CHAT_ONLY = ("audio",)

VISION = ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-4-turbo", "gpt-5", "o1", "o3", "o4", "computer-use")
"""Name prefixes of the model families that take images."""

NO_VISION = ("o1-mini", "o1-preview", "o3-mini", "gpt-4o-audio", "gpt-4o-mini-audio", "gpt-4o-realtime")
"""Exceptions among them: models that take text (or sound) only."""

REASONING = ("o1", "o3", "o4", "gpt-5", "codex")
"""Name prefixes of the reasoning model families (their turns carry reasoning items)."""

TOOL_SEARCH_SINCE = (5, 4)
"""The first GPT version whose models take ``tool_search`` (gpt-5.4)."""

_VERSION = re.compile(r"gpt-(\d+)(?:\.(\d+))?")


@attrs.frozen
class OpenAISettings:
    """What the provider's own keys decided, for one model."""

    api: str = "chat"
    images: bool = False
    audio: bool = False
    strict_tools: bool = False
    tool_search: bool = False
    reasoning_items: bool = False
    programmatic: bool = False


def family(model: str) -> str:
    """The model's base name, lower case: a fine-tune's base model (``ft:gpt-4o-mini:org::id``
    -> ``gpt-4o-mini``), a model router's name without its vendor (``openai/gpt-5`` -> ``gpt-5``)."""
    name = model.strip().lower()
    if name.startswith("ft:"):
        name = name[3:].split(":", 1)[0]
    return name.rsplit("/", 1)[-1]


def official(options: ProviderOptions) -> bool:
    """Whether the model is reached at OpenAI's own API (no ``base_url``, or one on
    ``api.openai.com``, a proxy's path aside)."""
    if not options.base_url:
        return True
    host = urlsplit(options.base_url).hostname or ""
    return host == "api.openai.com"


def capabilities(model: str, api: str) -> dict[str, bool]:
    """What ``auto`` turns on for ``model`` at OpenAI's own API, by family."""
    name = family(model)
    version = _VERSION.match(name)
    numbers = (int(version.group(1)), int(version.group(2) or 0)) if version else (0, 0)
    reasoning = name.startswith(REASONING) and "chat" not in name
    return {
        "images": name.startswith(VISION) and not name.startswith(NO_VISION),
        "audio": api == "chat" and "audio" in name,
        "strict_tools": True,
        "tool_search": api == "responses" and numbers >= TOOL_SEARCH_SINCE,
        "reasoning_items": api == "responses" and reasoning,
        "programmatic": False,  # opt-in: no model list to go by
    }


def read_settings(model: str, options: ProviderOptions) -> OpenAISettings:
    """Check the provider's own keys (``options.extra``) for ``model``."""
    extra = options.extra
    api = extra["api"]
    if api not in APIS:
        raise ConfigError(f'expected "chat" or "responses", got {api!r}', path="model.api")
    auto = capabilities(model, api) if official(options) else dict.fromkeys(SWITCHES, False)
    chosen: dict[str, bool] = {}
    for key in SWITCHES:
        value = extra[key]
        if value == "auto":
            chosen[key] = auto[key]
            continue
        if not isinstance(value, bool):
            raise ConfigError(f'expected "auto", true or false, got {value!r}', path=f"model.{key}")
        wrong_api = (key in RESPONSES_ONLY and api != "responses") or (key in CHAT_ONLY and api != "chat")
        if value and wrong_api:
            needed = "responses" if key in RESPONSES_ONLY else "chat"
            raise ConfigError(f'{key} = true needs api = "{needed}" (this model uses "{api}")', path=f"model.{key}")
        chosen[key] = value
    return OpenAISettings(api=api, **chosen)


__all__ = ["EXTRA_KEYS", "OpenAISettings", "capabilities", "family", "official", "read_settings"]
