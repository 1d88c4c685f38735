"""``GeminiModel``: a Gemini model behind the Gemini API's ``generateContent``, through the
official ``google-genai`` SDK, whole (``complete``) or streamed (``stream``, the base
class's, reading the events with ``stream.StreamAssembler``).

The SDK makes the calls (its client, key header, base URL and API version, transport,
error classes and event-stream parser); greenroom builds the body. The method's
``contents`` argument is required, and the SDK would rebuild typed contents from its own
types, which refuse a part field they do not know yet and rename keys inside function
responses: so the body greenroom built (contents, system instruction, tools, generation
config) travels whole in the call's ``http_options.extra_body``, which the SDK merges
over what it built, lists replaced as given. The SDK's own retries and its automatic
function calling are off: greenroom's ``RetryPolicy`` retries, the run calls the tools.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from greenroom import (
    ModelRequest,
    ModelResponse,
    ProviderError,
    ProviderModel,
    ProviderOptions,
    ProviderResponseError,
)
from greenroom.kit import import_sdk, without_lone_surrogates
from greenroom_gemini.failures import too_deep, translate
from greenroom_gemini.limit import DeclarationLimit
from greenroom_gemini.request import contents, declaration, system_instruction
from greenroom_gemini.response import read_response
from greenroom_gemini.settings import GeminiSettings
from greenroom_gemini.stream import StreamAssembler

SDK_MODULE = "google.genai"
EXTRA = "gemini"

PLACEHOLDER_CONTENTS = "."
"""What the SDK method's required ``contents`` is given; the body's own replace it."""


class GeminiModel(ProviderModel):
    """A Gemini model behind ``POST /{version}/models/{model}:generateContent``."""

    provider = "gemini"
    native_tool_search = False
    """Gemini has no tool search: deferred tools are reached through greenroom's own
    search tool (the deferred-tools plugin's dispatch or inject strategy)."""

    def __init__(
        self, model: str, options: ProviderOptions, settings: GeminiSettings | None = None, sdk: Any = None
    ) -> None:
        super().__init__(model, options)
        self.settings = settings if settings is not None else GeminiSettings()
        self.sdk = sdk if sdk is not None else import_sdk(SDK_MODULE, EXTRA, self.provider)
        self.limit = DeclarationLimit(plugin=self.provider)

    @property
    def images(self) -> bool:
        """Whether tool results' images are sent to the model (``[model] images``)."""
        return self.settings.images

    # ------------------------------------------------------------------ request
    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"contents": contents(request, self.settings)}
        system = system_instruction(request)
        if system is not None:
            body["systemInstruction"] = system
        tools = self.limit.apply(request.tools, f"{self.provider}:{self.model}")
        if tools:  # the API rejects an empty declarations list
            body["tools"] = [{"functionDeclarations": [declaration(t) for t in tools]}]
        generation: dict[str, Any] = {}
        if self.options.temperature is not None:
            generation["temperature"] = self.options.temperature
        if self.options.max_tokens is not None:
            generation["maxOutputTokens"] = self.options.max_tokens
        if self.settings.thinking:
            generation["thinkingConfig"] = dict(self.settings.thinking)
        if generation:
            body["generationConfig"] = generation
        return body

    def make_client(self, key: str) -> Any:
        types = self.sdk.types
        http = types.HttpOptions(
            base_url=self.options.base_url,
            timeout=int(self.options.timeout * 1000),  # milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),  # greenroom's own loop retries
        )
        # the key and the API are named outright: the SDK would otherwise read
        # GOOGLE_API_KEY before GEMINI_API_KEY, and GOOGLE_GENAI_USE_VERTEXAI
        return self.sdk.Client(api_key=key, vertexai=False, http_options=http).aio

    async def send(self, client: Any, body: dict[str, Any]) -> Any:
        """One call; returns the body of the answer as the API sent it (its text)."""
        response = await client.models.generate_content(
            model=self.model, contents=PLACEHOLDER_CONTENTS, config=self._config(body, whole=True)
        )
        return response.sdk_http_response.body

    async def open_stream(self, client: Any, body: dict[str, Any]) -> Any:
        """One streamed call (``streamGenerateContent?alt=sse``): the SDK's response
        objects, one per event (the call is made when the first one is read)."""
        return await client.models.generate_content_stream(
            model=self.model, contents=PLACEHOLDER_CONTENTS, config=self._config(body, whole=False)
        )

    def _config(self, body: dict[str, Any], *, whole: bool) -> Any:
        types = self.sdk.types
        return types.GenerateContentConfig(
            # text from outside (a file name, a tool's output) with a lone surrogate would
            # go out as a "\ud800" escape, which is not Unicode: replaced first
            http_options=types.HttpOptions(extra_body=without_lone_surrogates(body)),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            should_return_http_response=True if whole else None,
        )

    # ------------------------------------------------------------------ response
    def decode(self, raw: Any) -> Any:
        """The answer's text -> its JSON (text that is not JSON is given back, for the
        base class to say so); a streamed event (the SDK's object) -> its JSON as the
        API names it."""
        if isinstance(raw, str):
            try:
                return json.loads(raw)
            except RecursionError:
                raise too_deep(self.model) from None
            except ValueError as exc:
                if raw.lstrip().startswith(("{", "[")):
                    raise ProviderResponseError(
                        self.provider, f"the response body is not valid JSON ({exc})", model=self.model
                    ) from None
                return raw
        if hasattr(raw, "model_dump"):
            return raw.model_dump(mode="json", by_alias=True, exclude_none=True)
        return raw

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        return read_response(data, request, self.model)

    def translate(self, exc: Exception) -> ProviderError:
        return translate(exc, self.sdk, self.model, self.options.timeout) or super().translate(exc)

    # ------------------------------------------------------------------ streaming
    def stream_reader(self, request: ModelRequest) -> StreamAssembler:
        return StreamAssembler(request, self.model)


__all__ = ["GeminiModel"]
