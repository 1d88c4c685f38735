"""``AnthropicModel``: a Claude model behind the Messages API, through the official SDK,
whole (``complete``) or streamed (``stream``, the base class's, reading the events with
``stream.StreamAssembler``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from greenroom import ModelRequest, ModelResponse, ProviderError, ProviderOptions, SDKModel
from greenroom.kit import error_endpoint
from greenroom_anthropic.programmatic import waiting_container
from greenroom_anthropic.request import deferred_on_wire, message_blocks, system_blocks, tool_blocks
from greenroom_anthropic.response import read_message
from greenroom_anthropic.settings import DEFAULT_MAX_TOKENS, AnthropicSettings
from greenroom_anthropic.stream import StreamAssembler, stream_error


class AnthropicModel(SDKModel):
    """A Claude model behind the Messages API (``POST /v1/messages``)."""

    provider = "anthropic"
    sdk_module = "anthropic"
    extra = "anthropic"
    client_class = "AsyncAnthropic"
    required = ("model", "max_tokens", "messages")

    def __init__(
        self, model: str, options: ProviderOptions, settings: AnthropicSettings | None = None, sdk: Any = None
    ) -> None:
        super().__init__(model, options, sdk)
        self.settings = settings if settings is not None else AnthropicSettings()

    @property
    def prompt_cache(self) -> bool:
        return self.settings.prompt_cache

    @property
    def native_tool_search(self) -> bool:
        """Whether deferred tools (``ModelRequest.deferred``) are sent with ``defer_loading``
        and a search tool: Anthropic's hosted one (``[model] tool_search = "bm25"`` or
        ``"regex"``), or greenroom's own answering with ``tool_reference`` blocks
        (``"client"``); not with ``"off"``."""
        return self.settings.defers

    @property
    def programmatic_tool_calling(self) -> bool:
        """Whether the tools of ``ModelRequest.programmatic`` are offered to the model's
        code in Anthropic's code execution container (``[model] programmatic``)."""
        return self.settings.programmatic

    @property
    def images(self) -> bool:
        """Whether tool results' images are sent to the model (``[model] images``)."""
        return self.settings.images

    # ------------------------------------------------------------------ request
    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        deferred = deferred_on_wire(request, self.settings)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.options.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": message_blocks(request, self.settings, deferred),
        }
        system = system_blocks(request, self.settings)
        if system:
            body["system"] = system
        tools = tool_blocks(request, self.settings, deferred)
        if tools:
            body["tools"] = tools
        container = waiting_container(request.messages) if self.settings.programmatic else None
        if container is not None:
            body["container"] = container  # the model's code waits there for these results
        if self.settings.thinking is not None:
            body["thinking"] = dict(self.settings.thinking)
        if self.options.temperature is not None:
            body["temperature"] = self.options.temperature
        return body

    def sdk_method(self, client: Any) -> Any:
        return client.messages.create

    def request_headers(self) -> dict[str, str]:
        betas = self.settings.betas
        return {"anthropic-beta": ",".join(betas)} if betas else {}

    # ------------------------------------------------------------------ response
    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        return read_message(data, request, self.model)

    def translate(self, exc: Exception) -> ProviderError:
        """An SDK exception -> the ``ProviderError``; while streaming, an ``error`` event
        and a connection cut mid-stream too (``stream.stream_error``)."""
        return stream_error(exc, self.sdk, self.model, error_endpoint(exc)) or super().translate(exc)

    # ------------------------------------------------------------------ streaming
    def stream_reader(self, request: ModelRequest) -> StreamAssembler:
        """A fresh reader of one streamed attempt's events (``stream`` is the base class's:
        text deltas as they come, then the response; retried before any text)."""
        return StreamAssembler(request, self.model)


__all__ = ["AnthropicModel"]
