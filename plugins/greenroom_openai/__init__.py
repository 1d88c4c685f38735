"""The ``openai`` model provider: Chat Completions (default) or the Responses API,
through the official ``openai`` SDK, whole (``complete``) or streamed (``stream``).

``agent.model = "openai:gpt-4o-mini"``, with ``pip install 'greenroom[openai]'``. With
``[model] base_url`` it talks to any OpenAI-compatible server (vLLM, Ollama, LM Studio,
llama.cpp, LiteLLM). A first-party plugin (entry point ``openai``) on the public provider
API (``greenroom.SDKModel``, ``greenroom.kit``), as a third-party provider would be. The SDK
is imported when a model is built, not when this package is, so ``greenroom plugins``
works without the ``openai`` extra.

- ``settings``: the provider's own ``[model]`` keys and what each model family takes;
- ``chat`` / ``responses``: each API's request body and answer;
- ``streams``: each API's streamed events -> text deltas and the whole response;
- ``search``: deferred tools behind the Responses API's ``tool_search``, answered by
  greenroom's own search;
- ``strict``: which tool schemas are sent with ``strict: true``;
- ``wire``: what both APIs share (tool definitions, calls, images and sounds).
"""

from __future__ import annotations

from greenroom_openai.chat import OpenAIChatModel
from greenroom_openai.plugin import KEY_ENV, OpenAIProvider, make_openai_model
from greenroom_openai.responses import OpenAIResponsesModel
from greenroom_openai.settings import OpenAISettings

__all__ = [
    "KEY_ENV",
    "OpenAIChatModel",
    "OpenAIProvider",
    "OpenAIResponsesModel",
    "OpenAISettings",
    "make_openai_model",
]
