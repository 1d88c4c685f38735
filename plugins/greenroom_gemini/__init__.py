"""The ``gemini`` model provider: Gemini models through the Gemini API's
``generateContent`` (whole, or streamed as server-sent events) and the official
``google-genai`` SDK.

``agent.model = "gemini:gemini-2.5-flash"``, with ``pip install 'greenroom[gemini]'`` and
the key in ``GEMINI_API_KEY``. The SDK is imported when a model is built, not when this
package is, so ``greenroom plugins`` lists the provider without the extra.

Gemini has no tool search of its own: deferred tools are reached through greenroom's
search tool (the deferred-tools plugin's dispatch and inject strategies), and a request
never holds more than the API's 512 function declarations (``limit``).

Modules: ``settings`` (the provider's ``[model]`` keys), ``request`` (system, tools and
contents on the wire: function responses with images, replayed parts), ``limit`` (the
declaration limit, kept by learned priority), ``response`` (a response -> a
``ModelResponse``; parts with thought signatures kept whole), ``stream`` (the events
assembled into that same response), ``failures`` (SDK errors -> ``ProviderError``),
``model`` (``GeminiModel``), ``plugin`` (``make_gemini_model``, ``GeminiProvider``).
docs/providers.md ("Gemini") says what each does on the wire.
"""

from __future__ import annotations

from greenroom_gemini.model import GeminiModel
from greenroom_gemini.plugin import KEY_ENV, GeminiProvider, make_gemini_model

__all__ = ["KEY_ENV", "GeminiModel", "GeminiProvider", "make_gemini_model"]
