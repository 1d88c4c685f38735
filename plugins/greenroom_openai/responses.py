"""``OpenAIResponsesModel``: a model behind the Responses API, used statelessly.

system -> ``instructions``; tools -> ``{"type": "function", name, description,
parameters, strict}``; calls and results -> ``function_call`` / ``function_call_output``
input items (a result's images as ``input_image`` parts of its output); ``store: false``,
so each request carries the whole history (greenroom owns the conversation).

Turns that carry items greenroom has no type for are kept whole in the assistant
message's ``provider_content`` and replayed in order: reasoning items (asked for with
``include: ["reasoning.encrypted_content"]``, since with ``store: false`` only their
encrypted content carries them to the next request; one without it is dropped),
``tool_search_call`` items (``search``), function calls made inside a namespace, and a
program's items with the calls it made (``programmatic``).
Replayed items lose the ids of stored items (a call's ``fc_``), which the API could not
look up with ``store: false``, and a message is replayed as its text; a reasoning item
keeps its own id.
Reasoning is never part of the text or of a tool result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from greenroom import (
    HostedSearch,
    Message,
    ModelRequest,
    ModelResponse,
    ProviderContent,
    ProviderResponseError,
    ToolCall,
    ToolDescriptor,
    Usage,
)
from greenroom.kit import CLIENT_SEARCH_TOOL, IdentityMemo, paired_messages, parse_arguments
from greenroom_openai.chat import OpenAIChatModel
from greenroom_openai.programmatic import ALLOWED_CALLERS, PROGRAMMATIC_TOOL, callers, from_program
from greenroom_openai.programmatic import ITEMS as PROGRAM_ITEMS
from greenroom_openai.search import on_wire, search_output, search_tools
from greenroom_openai.streams import ResponsesStream
from greenroom_openai.wire import arguments_text, function_fields, int_of, responses_output, tool_call

ITEMS = "openai-responses"
"""``ProviderContent.provider`` of a turn kept as the Responses API's output items."""

KEPT = ("reasoning", "tool_search_call", "tool_search_output", *PROGRAM_ITEMS)
"""Item types that make a turn kept whole."""


class OpenAIResponsesModel(OpenAIChatModel):
    """A model behind the Responses API (``POST /responses``)."""

    required = ("model", "input")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arrays: IdentityMemo[list[dict[str, Any]]] = IdentityMemo(4)

    @property
    def native_tool_search(self) -> bool:
        """Whether deferred tools are sent behind ``tool_search`` (``[model] tool_search``;
        by default gpt-5.4 and later on OpenAI's API)."""
        return self.settings.tool_search

    @property
    def programmatic_tool_calling(self) -> bool:
        """Whether the tools of ``ModelRequest.programmatic`` are offered to the model's
        programs (``[model] programmatic``, ``programmatic``)."""
        return self.settings.programmatic

    def tool_json(self, tool: ToolDescriptor) -> dict[str, Any]:
        return {"type": "function", **function_fields(tool, self.settings.strict_tools)}

    def deferred(self, request: ModelRequest) -> frozenset[str]:
        return on_wire(request) if self.settings.tool_search else frozenset()

    def build_tools(self, request: ModelRequest, deferred: frozenset[str]) -> list[dict[str, Any]]:
        # the same tuple and sets from step to step while nothing changes: built once
        coded = request.programmatic if self.settings.programmatic else frozenset()
        hit = self._arrays.lookup((request.tools, deferred, coded))
        if hit is not None:
            return hit[0]

        def function(t: ToolDescriptor) -> dict[str, Any]:
            fn = self.tool_json(t)
            return {**fn, "allowed_callers": list(ALLOWED_CALLERS)} if t.name in coded else fn

        if deferred:
            tools = search_tools(request, function, deferred)
        else:
            tools = [function(t) for t in request.tools]
        if coded:
            tools.append(dict(PROGRAMMATIC_TOOL))
        return self._arrays.put((request.tools, deferred, coded), tools)

    def build_input(self, request: ModelRequest, deferred: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        searches: set[str] = set()  # call ids of the model's tool_search_call items
        programs: dict[str, dict[str, Any]] = {}  # the caller of each call a program made
        for m in paired_messages(request.messages):
            if m.role == "user":
                items.append({"role": "user", "content": m.content})
            elif m.role == "assistant":
                if m.provider_content is not None and m.provider_content.provider == ITEMS:
                    items.extend(replayed(m.provider_content.blocks))
                    searches.update(search_calls(m.provider_content.blocks))
                    programs.update(callers(m.provider_content.blocks))
                    continue
                if m.content:
                    items.append({"role": "assistant", "content": m.content})
                for c in m.tool_calls:
                    items.append(
                        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": arguments_text(c)}
                    )
            elif m.tool_call_id in searches:
                items.append(search_output(m, request, self.tool_json, deferred))
            else:
                output = responses_output(m, self.settings)
                item = {"type": "function_call_output", "call_id": m.tool_call_id or "", "output": output}
                caller = programs.get(m.tool_call_id or "")
                items.append({**item, "caller": caller} if caller is not None else item)
        return items

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        deferred = self.deferred(request)
        body: dict[str, Any] = {"model": self.model, "input": self.build_input(request, deferred), "store": False}
        system = self.system_text(request)
        if system:
            body["instructions"] = system
        if request.tools:
            body["tools"] = self.build_tools(request, deferred)
        if self.settings.reasoning_items:
            body["include"] = ["reasoning.encrypted_content"]
        if self.options.temperature is not None:
            body["temperature"] = self.options.temperature
        if self.options.max_tokens is not None:
            body["max_output_tokens"] = self.options.max_tokens
        return body

    def sdk_method(self, client: Any) -> Any:
        return client.responses.create

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return body

    def stream_reader(self, request: ModelRequest) -> ResponsesStream:  # type: ignore[override]
        return ResponsesStream(self, request)

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        output = data.get("output")
        if not isinstance(output, list):
            raise ProviderResponseError(self.provider, "the response has no output list", model=self.model)
        texts: list[str] = []
        calls: list[ToolCall] = []
        searches: list[HostedSearch] = []
        keep = False
        for i, item in enumerate(output):
            if not isinstance(item, Mapping):
                continue
            kind = item.get("type")
            call_id = str(item.get("call_id") or item.get("id") or f"call_{request.step}_{i}")
            if kind == "message":
                for part in item.get("content") or ():
                    if isinstance(part, Mapping) and part.get("type") in ("output_text", "refusal"):
                        texts.append(str(part.get("text") or part.get("refusal") or ""))
            elif kind == "function_call":
                calls.append(tool_call(self.model, call_id, item.get("name"), item.get("arguments")))
                keep = keep or bool(item.get("namespace")) or from_program(item)
            elif kind == "tool_search_call" and item.get("execution") != "server":
                # greenroom's own search answers it, through a call the runtime runs
                args, raw = parse_arguments(item.get("arguments"))
                calls.append(ToolCall(call_id, CLIENT_SEARCH_TOOL, args, raw))
            elif kind == "tool_search_output":
                searches.append(HostedSearch(tools=_loaded_names(item.get("tools"))))
            keep = keep or kind in KEPT
        usage = data.get("usage") or {}
        details = usage.get("input_tokens_details") or {}
        status = data.get("status")
        kept = ProviderContent(ITEMS, tuple(dict(i) for i in output if isinstance(i, Mapping))) if keep else None
        return ModelResponse(
            message=Message("assistant", "".join(texts), tool_calls=tuple(calls), provider_content=kept),
            usage=Usage(
                input_tokens=int_of(usage.get("input_tokens")),
                output_tokens=int_of(usage.get("output_tokens")),
                cached_input_tokens=int_of(details.get("cached_tokens")),
            ),
            stop_reason="tool_calls" if calls else (str(status) if status else None),
            searches=tuple(searches),
        )


def replayed(blocks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A kept turn's output items as input items, in order: a reasoning item only with
    its encrypted content (and its id); other items without the ids and statuses of
    stored items."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "reasoning":
            if block.get("encrypted_content"):
                out.append({k: v for k, v in block.items() if k != "status"})
        elif kind in PROGRAM_ITEMS:  # their input forms require their ids and statuses
            out.append(dict(block))
        elif kind == "message":
            text = "".join(
                str(p.get("text") or p.get("refusal") or "")
                for p in block.get("content") or ()
                if isinstance(p, Mapping)
            )
            out.append({"role": "assistant", "content": text})
        else:
            out.append({k: v for k, v in block.items() if k not in ("id", "status")})
    return out


def search_calls(blocks: Sequence[Mapping[str, Any]]) -> set[str]:
    """The call ids of a kept turn's searches that greenroom answers."""
    return {
        str(b.get("call_id") or b.get("id"))
        for b in blocks
        if b.get("type") == "tool_search_call" and b.get("execution") != "server"
    }


def _loaded_names(tools: Any) -> tuple[str, ...]:
    """The function names a server-executed search loaded (namespaces opened)."""
    names: list[str] = []
    for t in tools if isinstance(tools, list) else ():
        if isinstance(t, Mapping) and t.get("type") == "namespace":
            names.extend(_loaded_names(t.get("tools")))
        elif isinstance(t, Mapping) and isinstance(t.get("name"), str):
            names.append(t["name"])
    return tuple(names)


__all__ = ["ITEMS", "OpenAIResponsesModel"]
