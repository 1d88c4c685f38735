"""Model-facing types: messages, requests, responses, usage, and the Model contract.

A model is anything with ``async complete(request) -> ModelResponse``. Providers (the
built-in ``scripted`` one, OpenAI, Anthropic, third-party ones) come from the
``greenroom_model_providers`` hook.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from greenroom.tools import ToolDescriptor
from greenroom.tools.base import MediaPart

Role = Literal["user", "assistant", "tool"]


@attrs.frozen
class ToolCall:
    """One call the model asked for.

    ``arguments`` is None when the model's argument text was not a JSON object; the raw
    text is kept in ``raw_arguments`` so the error can quote it.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] | None = attrs.field(factory=dict)
    raw_arguments: str | None = None


@attrs.frozen
class ProviderContent:
    """A provider's own wire blocks for one assistant turn, kept to be replayed verbatim.

    Some turns carry blocks greenroom has no type for (Anthropic's ``server_tool_use`` and
    ``tool_search_tool_result`` from its hosted tool search) and that the provider needs
    back, unchanged, in the next request. The provider that wrote them replays
    ``blocks`` instead of rebuilding the turn from ``content`` and ``tool_calls``; every
    other provider ignores them. Sessions save and load them with the message.
    """

    provider: str
    blocks: tuple[dict[str, Any], ...] = ()


@attrs.frozen
class Message:
    """One turn of the conversation.

    ``provider_content`` is set on an assistant turn that a provider needs replayed
    byte for byte (see ``ProviderContent``); ``content`` and ``tool_calls`` still say
    what the turn means, for the runtime and for every other provider.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    provider_content: ProviderContent | None = None
    parts: tuple[MediaPart, ...] = ()
    """On a tool result: the images and sounds the tool returned (``content`` names each
    too); a provider whose model takes them sends them, any other sends ``content``."""


@attrs.frozen
class SystemSection:
    """One named part of the system prompt.

    ``stable`` sections must not change during a session (they sit in the cacheable
    prefix); providers place cache breakpoints after the last stable section.
    """

    key: str
    text: str
    stable: bool = True


@attrs.frozen
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@attrs.frozen
class ModelRequest:
    """Exactly what one model call is given.

    ``deferred`` names tools in ``tools`` that a provider with hosted tool search may
    keep out of the model's context until its search loads them (Anthropic's
    ``defer_loading``). A provider without hosted search ignores it and sends every
    tool in full; plugins ask ``supports_native_tool_search(model)`` first.

    ``programmatic`` names tools in ``tools`` that the model may also call from code its
    provider runs (Anthropic's and OpenAI's programmatic tool calling): the calls that
    code makes come back as ordinary tool calls, which the run answers. A provider without
    it ignores it; plugins ask ``supports_programmatic_calls(model)`` first.
    """

    system: tuple[SystemSection, ...]
    tools: tuple[ToolDescriptor, ...]
    messages: tuple[Message, ...]
    step: int = 0
    deferred: frozenset[str] = frozenset()
    programmatic: frozenset[str] = frozenset()

    @property
    def system_text(self) -> str:
        return "\n\n".join(s.text for s in self.system if s.text)


class RequestDraft:
    """The request while BeforeInference plugins shape it (mutable until sent).

    ``tools`` is a list plugins edit in place or replace. It is made from the tools the
    request started with (every tool the agent may use) only when first read, so a
    plugin that replaces it outright (``request.tools = [...]``) never pays for copying
    a catalog of any size; ``base_tools`` reads what it started with, without a copy.
    """

    __slots__ = ("_base", "_tools", "deferred", "messages", "programmatic", "step", "system")

    def __init__(
        self,
        system: list[SystemSection],
        tools: Sequence[ToolDescriptor],
        messages: list[Message],
        step: int = 0,
        deferred: set[str] | frozenset[str] | None = None,
    ) -> None:
        self.system = system
        self._base: Sequence[ToolDescriptor] = tools
        self._tools: list[ToolDescriptor] | None = tools if isinstance(tools, list) else None
        self.messages = messages
        self.step = step
        self.deferred: set[str] | frozenset[str] = set() if deferred is None else deferred
        """Names of ``tools`` a hosted search keeps out of the context until found (a
        name that is not in ``tools`` means nothing; providers go by the tools they send)."""
        self.programmatic: set[str] | frozenset[str] = set()
        """Names of ``tools`` the model may also call from code its provider runs."""

    @property
    def tools(self) -> list[ToolDescriptor]:
        if self._tools is None:
            self._tools = list(self._base)
        return self._tools

    @tools.setter
    def tools(self, value: Sequence[ToolDescriptor]) -> None:
        if isinstance(value, tuple):  # kept as given (copied only if read as a list)
            self._base, self._tools = value, None
        else:
            self._tools = value if isinstance(value, list) else list(value)

    @property
    def base_tools(self) -> Sequence[ToolDescriptor]:
        """The tools as they stand, read-only: those the request started with (no copy)
        until a plugin reads or replaces ``tools``."""
        return self._base if self._tools is None else self._tools

    def freeze(self) -> ModelRequest:
        # frozenset() of a frozenset and tuple() of a tuple are the same object: a
        # strategy that keeps them pays nothing here, whatever the catalog's size
        deferred = frozenset(self.deferred) if self.deferred else frozenset()
        programmatic = frozenset(self.programmatic) if self.programmatic else frozenset()
        return ModelRequest(
            tuple(self.system), tuple(self.base_tools), tuple(self.messages), self.step, deferred, programmatic
        )

    def set_section(self, section: SystemSection) -> None:
        """Add a system section, or replace the one with the same key in place."""
        for i, existing in enumerate(self.system):
            if existing.key == section.key:
                self.system[i] = section
                return
        self.system.append(section)

    def remove_section(self, key: str) -> None:
        self.system[:] = [s for s in self.system if s.key != key]


@attrs.frozen
class HostedSearch:
    """One tool search the provider ran on its side during a model call.

    ``query`` is what the model searched for (a regex or keywords, per the provider's
    search tool), ``tools`` the names it loaded, ``error`` the provider's error code
    when the search failed.
    """

    query: str = ""
    tools: tuple[str, ...] = ()
    error: str | None = None


@attrs.frozen
class ModelResponse:
    """A model's answer. ``searches`` lists the hosted tool searches it ran (empty for
    providers without one)."""

    message: Message
    usage: Usage = Usage()
    stop_reason: str | None = None
    searches: tuple[HostedSearch, ...] = ()

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.message.tool_calls


@runtime_checkable
class Model(Protocol):
    """The one thing greenroom asks of a model."""

    async def complete(self, request: ModelRequest) -> ModelResponse: ...


@attrs.frozen
class TextDelta:
    """A piece of the model's visible text, as it arrives on a stream."""

    text: str


StreamItem = TextDelta | ModelResponse

TextListener = Callable[[TextDelta], None]
"""Hears a model's text as it arrives (``Runtime.run(..., on_text=...)``)."""
"""What a model's stream yields: text as it comes, then the whole response, once, last."""


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A model that can also stream: ``stream(request)`` yields ``TextDelta``s as the text
    arrives and ends with the complete ``ModelResponse`` (the same one ``complete`` would
    give: tool calls assembled, usage read from the stream). A stream that breaks is
    retried while nothing was yielded, else raises a ``ModelError`` naming what broke;
    it never yields a half-parsed call."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]: ...


def supports_native_tool_search(model: object) -> bool:
    """Whether ``model`` honours ``ModelRequest.deferred`` with a hosted tool search.

    A model says so with a true ``native_tool_search`` attribute; anything without one
    (the scripted model, OpenAI's adapter, third-party models) does not.
    """
    return getattr(model, "native_tool_search", False) is True


def supports_programmatic_calls(model: object) -> bool:
    """Whether ``model`` honours ``ModelRequest.programmatic``: its provider runs the
    model's code, which calls those tools. A model says so with a true
    ``programmatic_tool_calling`` attribute; anything without one does not."""
    return getattr(model, "programmatic_tool_calling", False) is True


class ModelError(RuntimeError):
    """A model or provider failed in a way the run cannot continue from."""


ProviderFactory = Callable[[str, Mapping[str, Any]], Model]
"""Builds a model from the part after ``provider:`` in ``agent.model`` and the
``[model]`` options table of the config."""


@attrs.frozen
class ToolPlacement:
    """How a plugin placed one tool, for operators (``greenroom inspect``).

    ``source`` is machine-readable (what decided, such as ``rule`` or ``prior``; each
    plugin documents its values), ``detail`` the reason in words for people.
    """

    mode: Literal["eager", "deferred"]
    source: str
    detail: str = ""
