"""The Gemini provider's own ``[model]`` keys, checked into ``GeminiSettings``.

``images`` (whether tool results' images go to the model inside its function responses:
``"auto"`` for Gemini 3 and later, ``true`` or ``false``) and ``thinking`` (the request's
``thinkingConfig``: ``thinking_budget``, ``thinking_level``, ``include_thoughts``). Every
bad value is a ``ConfigError`` naming its key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from greenroom import ConfigError

EXTRA_KEYS: dict[str, Any] = {"images": "auto", "thinking": {}}
"""The provider's own keys and their defaults (``parse_provider_options``' ``extra_keys``)."""

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp"})
"""The image types a function response carries (``inlineData`` of its ``parts``)."""

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""Inline data above this is refused by the API (a whole request is held to 20 MB too); a
larger image is read from its placeholder."""

IMAGES_SINCE = 3
"""The first Gemini generation whose function responses take images (Gemini 3)."""

THINKING = {
    "thinking_budget": "thinkingBudget",
    "thinking_level": "thinkingLevel",
    "include_thoughts": "includeThoughts",
}
"""``[model] thinking`` keys -> their names in the request's ``thinkingConfig``."""

THINKING_LEVELS = ("minimal", "low", "medium", "high")

_GENERATION = re.compile(r"(?:.*/)?gemini-(\d+)")


@attrs.frozen
class GeminiSettings:
    """What the provider's own keys decided, for one model."""

    images: bool = False
    thinking: Mapping[str, Any] = attrs.field(factory=dict)
    """The request's ``thinkingConfig`` (empty: none is sent, the model's default applies)."""


def generation(model: str) -> int:
    """The Gemini generation of a model name (``gemini-3-pro-preview`` -> 3,
    ``models/gemini-2.5-flash`` -> 2); 0 when the name says none (a tuned model)."""
    match = _GENERATION.match(model.strip().lower())
    return int(match.group(1)) if match else 0


def read_settings(model: str, extra: Mapping[str, Any]) -> GeminiSettings:
    """Check the provider's own keys (``ProviderOptions.extra``) for ``model``."""
    images = extra["images"]
    if images == "auto":
        images = generation(model) >= IMAGES_SINCE
    elif not isinstance(images, bool):
        raise ConfigError(f'expected "auto", true or false, got {images!r}', path="model.images")
    return GeminiSettings(images=images, thinking=_thinking(extra["thinking"]))


def _thinking(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"expected a table such as {{ thinking_budget = 1024 }}, got {value!r}", path="model.thinking"
        )
    out: dict[str, Any] = {}
    for key, item in value.items():
        path = f"model.thinking.{key}"
        if key not in THINKING:
            raise ConfigError(f"unknown key {key!r} (known: {', '.join(sorted(THINKING))})", path=path)
        if key == "thinking_budget" and (isinstance(item, bool) or not isinstance(item, int) or item < -1):
            raise ConfigError(f"expected an integer: -1 (dynamic), 0 (off) or a budget, got {item!r}", path=path)
        if key == "thinking_level" and item not in THINKING_LEVELS:
            raise ConfigError(f"expected one of {', '.join(THINKING_LEVELS)}, got {item!r}", path=path)
        if key == "include_thoughts" and not isinstance(item, bool):
            raise ConfigError(f"expected true or false, got {item!r}", path=path)
        out[THINKING[key]] = item
    return out


__all__ = ["EXTRA_KEYS", "GeminiSettings", "generation", "read_settings"]
