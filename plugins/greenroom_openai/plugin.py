"""``make_openai_model`` (``openai:MODEL`` and the ``[model]`` table -> a model) and
``OpenAIProvider``, the plugin that offers it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from greenroom import Model, Plugin, hookimpl, parse_provider_options
from greenroom.kit import missing_sdk
from greenroom_openai.chat import OpenAIChatModel
from greenroom_openai.responses import OpenAIResponsesModel
from greenroom_openai.settings import EXTRA_KEYS, read_settings

KEY_ENV = "OPENAI_API_KEY"


def make_openai_model(model_name: str, options: Mapping[str, Any]) -> Model:
    """``openai:MODEL`` -> a Chat Completions (default) or Responses model (nothing is
    called yet)."""
    opts = parse_provider_options("openai", options, default_key_env=KEY_ENV, extra_keys=EXTRA_KEYS)
    if not model_name:  # said before the keys are read: the name is what is missing
        return OpenAIChatModel(model_name, opts)
    settings = read_settings(model_name, opts)
    cls = OpenAIResponsesModel if settings.api == "responses" else OpenAIChatModel
    return cls(model_name, opts, settings)


class OpenAIProvider(Plugin):
    """Provides ``openai:MODEL`` (registered by entry point; needs the ``openai`` extra)."""

    name = "openai"

    @classmethod
    def unusable(cls) -> str | None:
        """Why this plugin cannot work here (``greenroom plugins`` says it), or None."""
        return missing_sdk(OpenAIChatModel.sdk_module, OpenAIChatModel.extra, OpenAIChatModel.provider)

    @hookimpl
    def greenroom_model_providers(self) -> dict[str, Any]:
        return {"openai": make_openai_model}


__all__ = ["KEY_ENV", "OpenAIProvider", "make_openai_model"]
