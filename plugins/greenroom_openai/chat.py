"""``OpenAIChatModel``: a model behind the Chat Completions API, whole or streamed.

- system sections -> one ``system`` message, stable sections first (OpenAI caches
  prompt prefixes automatically, so the stable text must lead);
- tools -> ``{"type": "function", "function": {name, description, parameters}}``, with
  ``strict: true`` where ``[model] strict_tools`` allows and the schema already is strict;
- assistant tool calls -> ``tool_calls`` with the model's own argument text;
- tool results -> ``{"role": "tool", "tool_call_id", "content"}`` (text only); their
  images (``image_url`` data URLs) and sounds (``input_audio``, on audio models) follow in
  one ``user`` message after the turn's last result;
- usage: ``prompt_tokens`` (cached ones included), ``completion_tokens``,
  ``prompt_tokens_details.cached_tokens``.

Streamed, the body adds ``stream_options: {"include_usage": true}`` so the last chunk
carries the usage; ``ChatStream`` assembles the chunks (``streams``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from greenroom import (
    Message,
    ModelRequest,
    ModelResponse,
    ProviderError,
    ProviderOptions,
    ProviderResponseError,
    SDKModel,
    ToolCall,
    ToolDescriptor,
    Usage,
)
from greenroom.kit import ordered_system, paired_messages
from greenroom_openai.settings import OpenAISettings
from greenroom_openai.streams import ChatStream, stream_failure
from greenroom_openai.wire import (
    arguments_text,
    chat_media,
    chat_result_text,
    function_fields,
    int_of,
    not_a_function,
    text_of,
    tool_call,
)


class OpenAIChatModel(SDKModel):
    """A model behind the Chat Completions API (``POST /chat/completions``)."""

    provider = "openai"
    sdk_module = "openai"
    extra = "openai"
    client_class = "AsyncOpenAI"
    required = ("model", "messages")

    def __init__(self, model: str, options: ProviderOptions, settings: OpenAISettings | None = None) -> None:
        super().__init__(model, options)
        self.settings = settings or OpenAISettings()

    @property
    def images(self) -> bool:
        """Whether tool results' images are sent to the model (``[model] images``)."""
        return self.settings.images

    def tool_json(self, tool: ToolDescriptor) -> dict[str, Any]:
        fields = function_fields(tool, self.settings.strict_tools)
        function = {k: v for k, v in fields.items() if k != "strict"}
        if fields["strict"]:
            function["strict"] = True
        return {"type": "function", "function": function}

    def system_text(self, request: ModelRequest) -> str:
        stable, volatile = ordered_system(request.system)
        return "\n\n".join(s.text for s in (*stable, *volatile))

    def build_messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        system = self.system_text(request)
        if system:
            out.append({"role": "system", "content": system})
        results: list[Message] = []  # the tool results of the current turn

        def end_turn() -> None:
            media = chat_media(results, self.settings)
            if media is not None:
                out.append(media)
            results.clear()

        for m in paired_messages(request.messages):
            if m.role != "tool":
                end_turn()
            if m.role == "user":
                out.append({"role": "user", "content": m.content})
            elif m.role == "assistant":
                msg: dict[str, Any] = {"role": "assistant"}
                if m.tool_calls:
                    # null, not "", beside tool calls: what the API itself returns
                    msg["content"] = m.content or None
                    msg["tool_calls"] = [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments_text(c)}}
                        for c in m.tool_calls
                    ]
                else:
                    msg["content"] = m.content
                out.append(msg)
            else:
                # Chat Completions has no error flag on tool results; the runtime's error
                # text already says what went wrong
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": m.tool_call_id or "",
                        "content": chat_result_text(m, self.settings),
                    }
                )
                results.append(m)
        end_turn()
        return out

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": self.build_messages(request)}
        if request.tools:  # the API rejects an empty tools array
            body["tools"] = [self.tool_json(t) for t in request.tools]
        if self.options.temperature is not None:
            body["temperature"] = self.options.temperature
        if self.options.max_tokens is not None:
            # max_tokens is deprecated (and refused by reasoning models); servers that
            # only know it can get it through extra_body
            body["max_completion_tokens"] = self.options.max_tokens
        return body

    def sdk_method(self, client: Any) -> Any:
        return client.chat.completions.create

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise ProviderResponseError(self.provider, "the response has no choices", model=self.model)
        choice = choices[0]
        msg = choice.get("message") or {}
        content = text_of(msg.get("content")) or text_of(msg.get("refusal"))
        calls: list[ToolCall] = []
        for i, tc in enumerate(msg.get("tool_calls") or ()):
            if not isinstance(tc, Mapping):
                raise not_a_function(self.model, f"tool call {i} is {tc!r}")
            fn = tc.get("function")
            if not isinstance(fn, Mapping):
                kind = tc.get("type") or "function"
                raise not_a_function(self.model, f"tool call {i} ({kind}) has no function: {fn!r}")
            # some compatible servers omit ids; the tool result needs one to refer to
            call_id = str(tc.get("id") or f"call_{request.step}_{i}")
            calls.append(tool_call(self.model, call_id, fn.get("name"), fn.get("arguments")))
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        return ModelResponse(
            message=Message(role="assistant", content=content, tool_calls=tuple(calls)),
            usage=Usage(
                input_tokens=int_of(usage.get("prompt_tokens")),
                output_tokens=int_of(usage.get("completion_tokens")),
                cached_input_tokens=int_of(details.get("cached_tokens")),
            ),
            stop_reason=choice.get("finish_reason"),
        )

    def translate(self, exc: Exception) -> ProviderError:
        sdk = self.sdk
        if isinstance(exc, sdk.APIError) and not isinstance(exc, (sdk.APIStatusError, sdk.APIConnectionError)):
            # an error a stream reported after its 200 ({"error": {...}} in a chunk)
            body = exc.body if isinstance(exc.body, Mapping) else {"message": str(exc.message)}
            return stream_failure(body, self.model)
        return super().translate(exc)

    # ------------------------------------------------------------------ streaming
    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        # without it no chunk carries the usage; a server that rejects the key gets
        # extra_body = { stream_options = {} }
        body["stream_options"] = {"include_usage": True}
        return body

    def stream_reader(self, request: ModelRequest) -> ChatStream:
        return ChatStream(self, request)


__all__ = ["OpenAIChatModel"]
