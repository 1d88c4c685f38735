"""The ``anthropic`` model provider: the Messages API through the official SDK, with
prompt-cache breakpoints placed after the stable prefix.

``agent.model = "anthropic:claude-sonnet-4-5"``. The SDK is imported when a model is
built, not when this module is, so ``greenroom plugins`` works without the extra.

Anthropic caches a prompt prefix only up to an explicit ``cache_control`` breakpoint,
and the prefix runs tools -> system -> messages. greenroom places (at most the four
allowed):

1. on the last tool definition (tools are the stable head of every request);
2. on the last *stable* system block; non-stable sections are sent after it, so text
   that changes every step never sits inside the cached prefix;
3. on the last block of the last message, so the growing history is written once and
   read back on the next step;
4. on the block that ended the previous request (the one before the last assistant
   turn). The API looks for an earlier cache entry only about 20 blocks back from a
   breakpoint; a step with many parallel tool calls adds more blocks than that, and
   without this marker the whole history would be re-read uncached.

No breakpoint ever sits on text that changes between steps: tools, stable system text
and past messages are the same bytes on every request of a session.

Mapping: system sections -> ``system`` text blocks (stable first); tools -> ``{name,
description, input_schema}``; assistant tool calls -> ``tool_use`` blocks; tool results
-> ``tool_result`` blocks (with ``is_error``), consecutive ones grouped into one user
message. Usage: ``Usage.input_tokens`` is every input token of the request (Anthropic's
``input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens``, the
way OpenAI counts ``prompt_tokens``), ``cached_input_tokens`` the cache reads and
``cache_write_tokens`` the cache writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from greenroom.config import ConfigError
from greenroom.models import Message, Model, ModelRequest, ModelResponse, ToolCall, Usage
from greenroom.plugins import Plugin, hookimpl
from greenroom.providers._common import SDKModel, ordered_system, paired_messages, parse_arguments, parse_options
from greenroom.providers.errors import ProviderResponseError

KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires ``max_tokens``; this is the default when the config has none."""

EMPTY_TURN = "(no content)"
EMPTY_RESULT = "(no output)"
"""Stands in for an assistant turn with neither text nor tool calls: the API rejects
empty content, and dropping the turn would break the user/assistant alternation."""


def _ephemeral() -> dict[str, str]:
    return {"type": "ephemeral"}  # a fresh dict each time: blocks are mutated per request


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _previous_request_end(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last block the previous model call was sent: the end of the turn before the
    last assistant turn (whatever follows that assistant turn is new since then)."""
    for i in range(len(messages) - 1, 0, -1):
        if messages[i]["role"] == "assistant":
            block: dict[str, Any] = messages[i - 1]["content"][-1]
            return block
    return None


class AnthropicModel(SDKModel):
    """A Claude model behind the Messages API (``POST /v1/messages``)."""

    provider = "anthropic"
    sdk_module = "anthropic"
    extra = "anthropic"

    @property
    def prompt_cache(self) -> bool:
        return bool(self.options.extra.get("prompt_cache", True))

    def make_client(self, key: str) -> Any:
        return self.sdk.AsyncAnthropic(
            api_key=key,
            base_url=self.options.base_url,
            timeout=self.options.timeout,
            max_retries=0,  # greenroom's own loop retries (see _retry.py)
        )

    # ------------------------------------------------------------------ request
    def build_system(self, request: ModelRequest) -> list[dict[str, Any]]:
        stable, volatile = ordered_system(request.system)
        # the API rejects empty text blocks
        blocks: list[dict[str, Any]] = [{"type": "text", "text": s.text} for s in stable if s.text]
        if blocks and self.prompt_cache:
            blocks[-1]["cache_control"] = _ephemeral()
        blocks.extend({"type": "text", "text": s.text} for s in volatile if s.text)
        return blocks

    def build_tools(self, request: ModelRequest) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)} for t in request.tools
        ]
        if tools and self.prompt_cache:
            tools[-1]["cache_control"] = _ephemeral()
        return tools

    def build_messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []

        def push(role: str, blocks: list[dict[str, Any]]) -> None:
            # Tool results and a following user text must share one user message (the
            # API wants results in the turn right after the tool_use), and consecutive
            # results are one turn.
            if out and out[-1]["role"] == role:
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": role, "content": blocks})

        for m in paired_messages(request.messages):
            if m.role == "user":
                push("user", [{"type": "text", "text": m.content or EMPTY_TURN}])
            elif m.role == "assistant":
                blocks: list[dict[str, Any]] = []
                if m.content:
                    blocks.append({"type": "text", "text": m.content})
                for c in m.tool_calls:
                    # input must be an object; a call whose arguments were malformed (from
                    # another provider's session) is replayed as {} beside its error result
                    blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments or {})})
                push("assistant", blocks or [{"type": "text", "text": EMPTY_TURN}])
            else:
                push(
                    "user",
                    [
                        {
                            "type": "tool_result",
                            "tool_use_id": m.tool_call_id or "",
                            "content": m.content or EMPTY_RESULT,
                            "is_error": m.is_error,
                        }
                    ],
                )
        if out and self.prompt_cache:
            out[-1]["content"][-1]["cache_control"] = _ephemeral()
            previous_end = _previous_request_end(out)
            if previous_end is not None:
                previous_end["cache_control"] = _ephemeral()
        return out

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.options.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": self.build_messages(request),
        }
        system = self.build_system(request)
        if system:
            body["system"] = system
        tools = self.build_tools(request)
        if tools:
            body["tools"] = tools
        if self.options.temperature is not None:
            body["temperature"] = self.options.temperature
        return body

    required = ("model", "max_tokens", "messages")

    def sdk_method(self, client: Any) -> Any:
        return client.messages.create

    # ------------------------------------------------------------------ response
    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        content = data.get("content")
        if not isinstance(content, list):
            raise ProviderResponseError(self.provider, "the response has no content list", model=self.model)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for i, block in enumerate(content):
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text":
                texts.append(str(block.get("text") or ""))
            elif block.get("type") == "tool_use":
                raw_input = block.get("input")
                args, raw = parse_arguments(raw_input if raw_input is not None else {})
                calls.append(
                    ToolCall(
                        str(block.get("id") or f"toolu_{request.step}_{i}"),
                        str(block.get("name") or ""),
                        args,
                        # input arrives as an object; keep text only when it was not one
                        None if isinstance(raw_input, Mapping) else raw,
                    )
                )
            # thinking blocks are not kept: greenroom messages have no place for their
            # signatures, so extended thinking with tool use is not supported yet
        usage = data.get("usage") or {}
        fresh = _int(usage.get("input_tokens"))
        read = _int(usage.get("cache_read_input_tokens"))
        written = _int(usage.get("cache_creation_input_tokens"))
        return ModelResponse(
            message=Message(role="assistant", content="".join(texts), tool_calls=tuple(calls)),
            usage=Usage(
                input_tokens=fresh + read + written,
                output_tokens=_int(usage.get("output_tokens")),
                cached_input_tokens=read,
                cache_write_tokens=written,
            ),
            stop_reason=data.get("stop_reason"),
        )


def make_anthropic_model(model_name: str, options: Mapping[str, Any]) -> Model:
    """``anthropic:MODEL`` -> an ``AnthropicModel``."""
    opts = parse_options("anthropic", options, default_key_env=KEY_ENV, extra_keys={"prompt_cache": True})
    if not isinstance(opts.extra["prompt_cache"], bool):
        raise ConfigError(f"expected true or false, got {opts.extra['prompt_cache']!r}", path="model.prompt_cache")
    return AnthropicModel(model_name, opts)


class AnthropicProvider(Plugin):
    """Provides ``anthropic:MODEL`` (registered by entry point; needs the ``anthropic`` extra)."""

    name = "anthropic"

    @hookimpl
    def greenroom_model_providers(self) -> dict[str, Any]:
        return {"anthropic": make_anthropic_model}


__all__ = ["AnthropicModel", "AnthropicProvider", "make_anthropic_model"]
