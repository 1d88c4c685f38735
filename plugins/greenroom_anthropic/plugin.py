"""``make_anthropic_model`` (``anthropic:MODEL`` and the ``[model]`` table -> a model) and
``AnthropicProvider``, the plugin that offers it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from greenroom import Model, Plugin, hookimpl, parse_provider_options
from greenroom.kit import missing_sdk
from greenroom_anthropic.model import AnthropicModel
from greenroom_anthropic.settings import EXTRA_KEYS, read_settings

KEY_ENV = "ANTHROPIC_API_KEY"


def make_anthropic_model(model_name: str, options: Mapping[str, Any]) -> Model:
    """``anthropic:MODEL`` -> an ``AnthropicModel`` (nothing is called yet)."""
    opts = parse_provider_options("anthropic", options, default_key_env=KEY_ENV, extra_keys=EXTRA_KEYS)
    return AnthropicModel(model_name, opts, read_settings(model_name, opts))


class AnthropicProvider(Plugin):
    """Provides ``anthropic:MODEL`` (registered by entry point; needs the ``anthropic`` extra)."""

    name = "anthropic"

    @classmethod
    def unusable(cls) -> str | None:
        """Why this plugin cannot work here (``greenroom plugins`` says it), or None."""
        return missing_sdk(AnthropicModel.sdk_module, AnthropicModel.extra, AnthropicModel.provider)

    @hookimpl
    def greenroom_model_providers(self) -> dict[str, Any]:
        return {"anthropic": make_anthropic_model}


__all__ = ["KEY_ENV", "AnthropicProvider", "make_anthropic_model"]
