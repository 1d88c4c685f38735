"""``make_gemini_model`` (``gemini:MODEL`` and the ``[model]`` table -> a model) and
``GeminiProvider``, the plugin that offers it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from greenroom import Model, Plugin, hookimpl, parse_provider_options
from greenroom.kit import missing_sdk
from greenroom_gemini.model import EXTRA, SDK_MODULE, GeminiModel
from greenroom_gemini.settings import EXTRA_KEYS, read_settings

KEY_ENV = "GEMINI_API_KEY"


def make_gemini_model(model_name: str, options: Mapping[str, Any]) -> Model:
    """``gemini:MODEL`` -> a ``GeminiModel`` (nothing is called yet)."""
    opts = parse_provider_options("gemini", options, default_key_env=KEY_ENV, extra_keys=EXTRA_KEYS)
    return GeminiModel(model_name, opts, read_settings(model_name, opts.extra))


class GeminiProvider(Plugin):
    """Provides ``gemini:MODEL`` (registered by entry point; needs the ``gemini`` extra)."""

    name = "gemini"

    @classmethod
    def unusable(cls) -> str | None:
        """Why this plugin cannot work here (``greenroom plugins`` says it), or None."""
        return missing_sdk(SDK_MODULE, EXTRA, "gemini")

    @hookimpl
    def greenroom_model_providers(self) -> dict[str, Any]:
        return {"gemini": make_gemini_model}


__all__ = ["KEY_ENV", "GeminiProvider", "make_gemini_model"]
