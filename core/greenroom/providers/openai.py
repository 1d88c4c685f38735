"""The ``openai`` model provider: Chat Completions (default) or the Responses API,
through the official ``openai`` SDK.

``agent.model = "openai:gpt-4o-mini"``. With ``[model] base_url`` it talks to any
OpenAI-compatible server (vLLM, Ollama, LM Studio, llama.cpp, LiteLLM). The SDK is
imported when a model is built, not when this module is, so ``greenroom plugins`` works
without the ``openai`` extra.

Mapping (Chat Completions):

- system sections -> one ``system`` message, stable sections first, joined by blank
  lines (OpenAI caches prompt prefixes automatically, so the stable text must lead);
- tools -> ``{"type": "function", "function": {name, description, parameters}}``;
- assistant tool calls -> ``tool_calls`` with JSON-string arguments (the model's own
  text is replayed when we have it, so the history never changes under the cache);
- tool results -> ``{"role": "tool", "tool_call_id", "content"}``;
- usage: ``prompt_tokens`` (cached ones included), ``completion_tokens`` and
  ``prompt_tokens_details.cached_tokens``.

Mapping (Responses, ``api = "responses"``): system -> ``instructions``; tools ->
``{"type": "function", name, description, parameters}``; calls and results ->
``function_call`` / ``function_call_output`` input items; ``store = false`` so each
request carries the whole history (greenroom owns the conversation).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from greenroom.config import ConfigError
from greenroom.models import Message, Model, ModelRequest, ModelResponse, ToolCall, Usage
from greenroom.plugins.discovery import Plugin, hookimpl
from greenroom.providers._messages import ordered_system, paired_messages, parse_arguments
from greenroom.providers._sdk import SDKModel
from greenroom.providers.errors import ProviderResponseError
from greenroom.providers.options import ProviderOptions, missing_sdk, parse_provider_options
from greenroom.tools import ToolDescriptor

KEY_ENV = "OPENAI_API_KEY"


def _arguments_text(call: ToolCall) -> str:
    # Replay the model's own text when we have it: it is what the model wrote, and a
    # malformed one must reach the model again verbatim next to the error result.
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(dict(call.arguments or {}), ensure_ascii=False)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text_of(content: Any) -> str:
    """Message content as text: a string, or a list of parts (some servers send parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


# ------------------------------------------------------------------------------ chat


class OpenAIChatModel(SDKModel):
    """A model behind the Chat Completions API (``POST /chat/completions``)."""

    provider = "openai"
    sdk_module = "openai"
    extra = "openai"
    client_class = "AsyncOpenAI"

    @staticmethod
    def tool_json(tool: ToolDescriptor) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)},
        }

    def build_messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        stable, volatile = ordered_system(request.system)
        system = "\n\n".join(s.text for s in (*stable, *volatile))
        if system:
            out.append({"role": "system", "content": system})
        for m in paired_messages(request.messages):
            if m.role == "user":
                out.append({"role": "user", "content": m.content})
            elif m.role == "assistant":
                msg: dict[str, Any] = {"role": "assistant"}
                if m.tool_calls:
                    # null, not "", beside tool calls: what the API itself returns
                    msg["content"] = m.content or None
                    msg["tool_calls"] = [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _arguments_text(c)}}
                        for c in m.tool_calls
                    ]
                else:
                    msg["content"] = m.content
                out.append(msg)
            else:
                # Chat Completions has no error flag on tool results; the runtime's error
                # text already says what went wrong.
                out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
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

    required = ("model", "messages")

    def sdk_method(self, client: Any) -> Any:
        return client.chat.completions.create

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise ProviderResponseError(self.provider, "the response has no choices", model=self.model)
        choice = choices[0]
        msg = choice.get("message") or {}
        content = _text_of(msg.get("content")) or _text_of(msg.get("refusal"))
        calls = []
        for i, tc in enumerate(msg.get("tool_calls") or ()):
            fn = tc.get("function") if isinstance(tc, Mapping) else None
            if not isinstance(fn, Mapping):
                continue  # custom (non-function) tools are not something greenroom sends
            args, raw = parse_arguments(fn.get("arguments"))
            # some compatible servers omit ids; the tool result needs one to refer to
            call_id = str(tc.get("id") or f"call_{request.step}_{i}")
            calls.append(ToolCall(call_id, str(fn.get("name") or ""), args, raw))
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        return ModelResponse(
            message=Message(role="assistant", content=content, tool_calls=tuple(calls)),
            usage=Usage(
                input_tokens=_int(usage.get("prompt_tokens")),
                output_tokens=_int(usage.get("completion_tokens")),
                cached_input_tokens=_int(details.get("cached_tokens")),
            ),
            stop_reason=choice.get("finish_reason"),
        )


# ------------------------------------------------------------------------------ responses


class OpenAIResponsesModel(OpenAIChatModel):
    """A model behind the Responses API (``POST /responses``), used statelessly."""

    @staticmethod
    def tool_json(tool: ToolDescriptor) -> dict[str, Any]:
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
            # strict mode would require every property to be listed as required and
            # additionalProperties false, which ordinary tool schemas are not
            "strict": False,
        }

    def build_input(self, request: ModelRequest) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for m in paired_messages(request.messages):
            if m.role == "user":
                items.append({"role": "user", "content": m.content})
            elif m.role == "assistant":
                if m.content:
                    items.append({"role": "assistant", "content": m.content})
                for c in m.tool_calls:
                    items.append(
                        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": _arguments_text(c)}
                    )
            else:
                items.append({"type": "function_call_output", "call_id": m.tool_call_id or "", "output": m.content})
        return items

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        stable, volatile = ordered_system(request.system)
        body: dict[str, Any] = {"model": self.model, "input": self.build_input(request), "store": False}
        system = "\n\n".join(s.text for s in (*stable, *volatile))
        if system:
            body["instructions"] = system
        if request.tools:
            body["tools"] = [self.tool_json(t) for t in request.tools]
        if self.options.temperature is not None:
            body["temperature"] = self.options.temperature
        if self.options.max_tokens is not None:
            body["max_output_tokens"] = self.options.max_tokens
        return body

    required = ("model", "input")

    def sdk_method(self, client: Any) -> Any:
        return client.responses.create

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        output = data.get("output")
        if not isinstance(output, list):
            raise ProviderResponseError(self.provider, "the response has no output list", model=self.model)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for i, item in enumerate(output):
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "message":
                for part in item.get("content") or ():
                    if isinstance(part, Mapping) and part.get("type") in ("output_text", "refusal"):
                        texts.append(str(part.get("text") or part.get("refusal") or ""))
            elif item.get("type") == "function_call":
                args, raw = parse_arguments(item.get("arguments"))
                call_id = str(item.get("call_id") or item.get("id") or f"call_{request.step}_{i}")
                calls.append(ToolCall(call_id, str(item.get("name") or ""), args, raw))
            # reasoning items are dropped: with store=false they cannot be referenced
            # later without encrypted content, and greenroom keeps no provider state
        usage = data.get("usage") or {}
        details = usage.get("input_tokens_details") or {}
        status = data.get("status")
        return ModelResponse(
            message=Message(role="assistant", content="".join(texts), tool_calls=tuple(calls)),
            usage=Usage(
                input_tokens=_int(usage.get("input_tokens")),
                output_tokens=_int(usage.get("output_tokens")),
                cached_input_tokens=_int(details.get("cached_tokens")),
            ),
            stop_reason="tool_calls" if calls else (str(status) if status else None),
        )


# ------------------------------------------------------------------------------ plugin


def make_openai_model(model_name: str, options: Mapping[str, Any]) -> Model:
    """``openai:MODEL`` -> a Chat Completions (default) or Responses model."""
    opts: ProviderOptions = parse_provider_options(
        "openai", options, default_key_env=KEY_ENV, extra_keys={"api": "chat"}
    )
    api = opts.extra["api"]
    if api == "chat":
        return OpenAIChatModel(model_name, opts)
    if api == "responses":
        return OpenAIResponsesModel(model_name, opts)
    raise ConfigError(f'expected "chat" or "responses", got {api!r}', path="model.api")


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


__all__ = ["OpenAIChatModel", "OpenAIProvider", "OpenAIResponsesModel", "make_openai_model"]
