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

Hosted tool search (``ModelRequest.deferred``, set by a plugin that leaves the searching
to the provider): the deferred tools are sent with ``"defer_loading": true`` after
the others, preceded by the search tool (``tool_search_tool_bm25_20251119``, or the
regex variant with ``[model] tool_search = "regex"``), which carries the tools
breakpoint: deferred tools are not part of the rendered prefix, so the breakpoint sits
on the last tool that is. An assistant turn in which the API ran a search
(``server_tool_use`` + ``tool_search_tool_result`` blocks) is stored whole in
``Message.provider_content`` and replayed verbatim, since the API reads the loaded
tools from those blocks; its ``tool_use`` blocks still become ``ToolCall`` s. The
searches are reported in ``ModelResponse.searches``. ``[model] betas`` adds names to the
``anthropic-beta`` header (tool search is part of the GA Messages API in the SDK's
types; older gateways may want ``advanced-tool-use-2025-11-20``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from greenroom.config import ConfigError
from greenroom.models import (
    HostedSearch,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ProviderContent,
    ToolCall,
    Usage,
)
from greenroom.plugins.discovery import Plugin, hookimpl
from greenroom.providers._messages import ordered_system, paired_messages, parse_arguments
from greenroom.providers._sdk import SDKModel
from greenroom.providers.errors import ProviderResponseError
from greenroom.providers.options import missing_sdk, parse_provider_options
from greenroom.tools import ToolDescriptor

KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires ``max_tokens``; this is the default when the config has none."""

EMPTY_TURN = "(no content)"
EMPTY_RESULT = "(no output)"
"""Stands in for an assistant turn with neither text nor tool calls: the API rejects
empty content, and dropping the turn would break the user/assistant alternation."""


SEARCH_TOOLS = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
"""The hosted search tool per ``[model] tool_search`` (``off`` sends none and makes the
model report no native tool search)."""

SERVER_BLOCKS = ("server_tool_use", "tool_search_tool_result")
"""Block types greenroom has no type for and must replay verbatim."""


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
    client_class = "AsyncAnthropic"

    @property
    def prompt_cache(self) -> bool:
        return bool(self.options.extra.get("prompt_cache", True))

    @property
    def native_tool_search(self) -> bool:
        """Whether deferred tools go to Anthropic's hosted tool search (``[model]
        tool_search`` is ``bm25`` or ``regex``, not ``off``)."""
        return self.options.extra.get("tool_search", "bm25") in SEARCH_TOOLS

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
        deferred = request.deferred if self.native_tool_search else frozenset()
        tools: list[dict[str, Any]] = [self.tool_json(t) for t in request.tools if t.name not in deferred]
        if deferred:
            # the search tool closes the part of the array the model sees up front; the
            # deferred tools follow it, in request order, with no breakpoint of their own
            tools.append(dict(SEARCH_TOOLS[self.options.extra["tool_search"]]))
        if tools and self.prompt_cache:
            tools[-1]["cache_control"] = _ephemeral()
        tools.extend({**self.tool_json(t), "defer_loading": True} for t in request.tools if t.name in deferred)
        return tools

    @staticmethod
    def tool_json(tool: ToolDescriptor) -> dict[str, Any]:
        return {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}

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
            elif (
                m.role == "assistant" and m.provider_content is not None and m.provider_content.provider == "anthropic"
            ):
                # the API's own blocks, exactly as it sent them (copied: breakpoints are
                # set on blocks of the request being built)
                push("assistant", copy.deepcopy(list(m.provider_content.blocks)))
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

    def request_headers(self) -> dict[str, str]:
        betas: Sequence[str] = self.options.extra.get("betas", ())
        return {"anthropic-beta": ",".join(betas)} if betas else {}

    # ------------------------------------------------------------------ response
    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        content = data.get("content")
        if not isinstance(content, list):
            raise ProviderResponseError(self.provider, "the response has no content list", model=self.model)
        texts: list[str] = []
        calls: list[ToolCall] = []
        keep = False
        for i, block in enumerate(content):
            if not isinstance(block, Mapping):
                continue
            if block.get("type") in SERVER_BLOCKS:
                keep = True
            elif block.get("type") == "text":
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
        kept = None
        if keep:
            blocks = tuple(copy.deepcopy(dict(b)) for b in content if isinstance(b, Mapping))
            kept = ProviderContent(self.provider, blocks)
        return ModelResponse(
            message=Message(role="assistant", content="".join(texts), tool_calls=tuple(calls), provider_content=kept),
            usage=Usage(
                input_tokens=fresh + read + written,
                output_tokens=_int(usage.get("output_tokens")),
                cached_input_tokens=read,
                cache_write_tokens=written,
            ),
            stop_reason=data.get("stop_reason"),
            searches=_searches(content),
        )


def _searches(content: Sequence[Any]) -> tuple[HostedSearch, ...]:
    """Each hosted tool search of a response: the model's query and what it loaded."""
    results = {
        b.get("tool_use_id"): b.get("content")
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "tool_search_tool_result"
    }
    out: list[HostedSearch] = []
    for b in content:
        if not isinstance(b, Mapping) or b.get("type") != "server_tool_use":
            continue
        if not str(b.get("name") or "").startswith("tool_search_tool"):
            continue
        raw_input = b.get("input")
        query = raw_input.get("query", "") if isinstance(raw_input, Mapping) else ""
        result = results.get(b.get("id"))
        names: tuple[str, ...] = ()
        error = None
        if isinstance(result, Mapping):
            if result.get("type") == "tool_search_tool_result_error":
                error = str(result.get("error_code") or "error")
            refs = result.get("tool_references")
            if isinstance(refs, list):
                names = tuple(str(r.get("tool_name")) for r in refs if isinstance(r, Mapping) and r.get("tool_name"))
        out.append(HostedSearch(str(query), names, error))
    return tuple(out)


def make_anthropic_model(model_name: str, options: Mapping[str, Any]) -> Model:
    """``anthropic:MODEL`` -> an ``AnthropicModel``."""
    opts = parse_provider_options(
        "anthropic",
        options,
        default_key_env=KEY_ENV,
        extra_keys={"prompt_cache": True, "tool_search": "bm25", "betas": ()},
    )
    if not isinstance(opts.extra["prompt_cache"], bool):
        raise ConfigError(f"expected true or false, got {opts.extra['prompt_cache']!r}", path="model.prompt_cache")
    choices = (*SEARCH_TOOLS, "off")
    if opts.extra["tool_search"] not in choices:
        raise ConfigError(
            f"expected one of {', '.join(choices)}, got {opts.extra['tool_search']!r}", path="model.tool_search"
        )
    betas = opts.extra["betas"]
    if isinstance(betas, str) or not isinstance(betas, Sequence) or not all(isinstance(b, str) and b for b in betas):
        raise ConfigError(f"expected a list of beta names, got {betas!r}", path="model.betas")
    return AnthropicModel(model_name, opts)


class AnthropicProvider(Plugin):
    """Provides ``anthropic:MODEL`` (registered by entry point; needs the ``anthropic`` extra)."""

    name = "anthropic"

    @classmethod
    def unusable(cls) -> str | None:
        """Why this plugin cannot work here (``greenroom plugins`` says it), or None."""
        return missing_sdk(AnthropicModel.sdk_module, AnthropicModel.extra, AnthropicModel.provider)

    @hookimpl
    def greenroom_model_providers(self) -> dict[str, Any]:
        return {"anthropic": make_anthropic_model}


__all__ = ["AnthropicModel", "AnthropicProvider", "make_anthropic_model"]
