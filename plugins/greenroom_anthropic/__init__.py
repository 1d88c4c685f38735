"""The ``anthropic`` model provider: the Messages API through the official SDK, whole or
streamed, with prompt-cache breakpoints placed after the stable prefix.

``agent.model = "anthropic:claude-sonnet-4-5"``, with ``pip install 'greenroom[anthropic]'``.
A first-party plugin (entry point ``anthropic``) on the public provider API
(``greenroom.SDKModel``, ``greenroom.kit``), as a third-party provider would be. The SDK is
imported when a model is built, not when this package is, so ``greenroom plugins`` works
without the extra.

Anthropic caches a prompt prefix only up to an explicit ``cache_control`` breakpoint,
and the prefix runs tools -> system -> messages. greenroom places (at most the four
allowed):

1. on the last tool the model sees up front (the hosted search tool when tools are
   deferred to it; deferred tools come after it and never carry one);
2. on the last *stable* system block; non-stable sections are sent after it, so text
   that changes every step never sits inside the cached prefix;
3. on the last block of the last message, so the growing history is written once and
   read back on the next step;
4. on the block that ended the previous request (the one before the last assistant
   turn). The API looks for an earlier cache entry only about 20 blocks back from a
   breakpoint; a step with many parallel tool calls adds more blocks than that, and
   without this marker the whole history would be re-read uncached.

Modules: ``settings`` (the provider's ``[model]`` keys), ``request`` (system, tools
and messages on the wire: images in tool results, ``tool_reference`` blocks,
``defer_loading``, breakpoints), ``response`` (a message -> a
``ModelResponse``; thinking and hosted-search blocks kept whole in
``Message.provider_content`` and replayed verbatim), ``stream`` (the event stream
assembled into that same message), ``model`` (``AnthropicModel``: ``complete`` and
``stream``), ``plugin`` (``make_anthropic_model``, ``AnthropicProvider``).
docs/providers.md ("Anthropic") says what each does on the wire.
"""

from __future__ import annotations

from greenroom_anthropic.model import AnthropicModel
from greenroom_anthropic.plugin import KEY_ENV, AnthropicProvider, make_anthropic_model

__all__ = ["KEY_ENV", "AnthropicModel", "AnthropicProvider", "make_anthropic_model"]
