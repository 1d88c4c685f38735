"""Model-facing types: messages, requests, responses, usage, and the Model contract.

A model is anything with ``async complete(request) -> ModelResponse``. Providers (the
built-in ``scripted`` one, OpenAI, Anthropic, third-party ones) come from the
``greenroom_model_providers`` hook.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from greenroom.tools import ToolDescriptor

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
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


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
    """Exactly what one model call is given."""

    system: tuple[SystemSection, ...]
    tools: tuple[ToolDescriptor, ...]
    messages: tuple[Message, ...]
    step: int = 0

    @property
    def system_text(self) -> str:
        return "\n\n".join(s.text for s in self.system if s.text)


@attrs.define
class RequestDraft:
    """The request while BeforeInference plugins shape it (mutable until sent)."""

    system: list[SystemSection]
    tools: list[ToolDescriptor]
    messages: list[Message]
    step: int = 0

    def freeze(self) -> ModelRequest:
        return ModelRequest(tuple(self.system), tuple(self.tools), tuple(self.messages), self.step)

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
class ModelResponse:
    message: Message
    usage: Usage = Usage()
    stop_reason: str | None = None

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.message.tool_calls


@runtime_checkable
class Model(Protocol):
    """The one thing greenroom asks of a model."""

    async def complete(self, request: ModelRequest) -> ModelResponse: ...


class ModelError(RuntimeError):
    """A model or provider failed in a way the run cannot continue from."""


ProviderFactory = Callable[[str, Mapping[str, Any]], Model]
"""Builds a model from the part after ``provider:`` in ``agent.model`` and the
``[model]`` options table of the config."""
