"""What a tool is: its descriptor, its result, the context of one call, the protocol.

A tool is a descriptor (name, description, JSON Schema of its parameters) plus an async
``execute(args, ctx)``. Tools see only their arguments and a small ``ToolCallContext``;
they cannot reach other tools, plugins or runtime state.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

import attrs

if TYPE_CHECKING:
    from greenroom.tools.schema.problem import SchemaProblem

RunT = TypeVar("RunT")
"""What a plugin's tool sees of the run: ``RunContext`` (``ToolCallContext[RunContext]``).
Tools know nothing of runs, so the type comes from the plugin that annotates it."""

Deferrable = Literal["never", "automatic", "always"]
"""A tool owner's word on deferral: ``never`` keeps the full schema, ``always`` defers
even below the activation thresholds, ``automatic`` leaves it to the placement rules."""


@attrs.frozen
class ToolDescriptor:
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    group: str | None = None
    deferrable: Deferrable = "automatic"
    problem: SchemaProblem | None = None
    """What its source already knows makes the tool unusable, whatever ``parameters``
    says (an MCP server listed it without a valid ``inputSchema``; ``parameters`` is then
    an empty object schema)."""

    def to_json(self) -> dict[str, Any]:
        """The provider-neutral function definition: description, name, parameters."""
        return {"description": self.description, "name": self.name, "parameters": dict(self.parameters)}


MediaKind = Literal["image", "audio"]


@attrs.frozen
class MediaPart:
    """An image or a sound a tool returned, for a model that can take it.

    ``data`` is base64, as MCP and the providers' APIs carry it. A provider whose model
    takes this kind sends it in the form its API accepts; any other reads the result's
    text, which names the part (``[image: image/png, 4033 bytes]``).
    """

    kind: MediaKind
    mime_type: str
    data: str

    @property
    def size(self) -> int:
        """Bytes once decoded (from the base64 length, without decoding)."""
        text = self.data.rstrip("=")
        return len(text) * 3 // 4

    def placeholder(self) -> str:
        """What a model that cannot take the part reads in its place."""
        return f"[{self.kind}: {self.mime_type}, {self.size} bytes]"


@attrs.frozen
class ToolResult:
    """What a tool call produced, as the model will read it.

    ``blocks`` holds the result's content as its source gave it, for whoever passes
    results on rather than reading them (``greenroom serve``): for an MCP tool, the
    server's content blocks. None when the source had only text. ``parts`` are the images
    and sounds among it, for the model (``content`` names each of them too, for models
    that take none).
    """

    content: str
    is_error: bool = False
    structured: Any = None
    blocks: tuple[Any, ...] | None = None
    parts: tuple[MediaPart, ...] = ()

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=message, is_error=True)

    @classmethod
    def from_value(cls, value: Any) -> ToolResult:
        """Turn whatever a tool function returned into a result.

        A ``MediaPart``, or a list or tuple holding some (mixed with text or other
        values), becomes a result with those ``parts``, in order; its text is the other
        items, each on its line, with each part's placeholder where the part was.
        """
        if isinstance(value, ToolResult):
            return value
        if isinstance(value, str):
            return cls(content=value)
        if isinstance(value, MediaPart):
            return cls(content=value.placeholder(), parts=(value,))
        if isinstance(value, (list, tuple)) and any(isinstance(v, MediaPart) for v in value):
            lines = [v.placeholder() if isinstance(v, MediaPart) else cls.from_value(v).content for v in value]
            return cls(content="\n".join(lines), parts=tuple(v for v in value if isinstance(v, MediaPart)))
        if attrs.has(type(value)):
            value = attrs.asdict(value)
        try:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
        return cls(content=text, structured=value)


Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""Report how far a call is: ``progress``, ``total`` (if known) and a message."""

progress_listener: ContextVar[Progress | None] = ContextVar("greenroom_progress_listener", default=None)
"""Who hears the progress of the calls made in this context (``greenroom serve`` sets it
to the MCP client's request); a call's ``ToolCallContext.progress`` comes from it."""


@attrs.frozen
class ToolCallContext(Generic[RunT]):
    """All a tool may know about the call it serves.

    ``run`` is the run's ``RunContext``, given only to tools a plugin contributed (through
    ``greenroom_tools``): such a tool, a tool search say, needs run state that user tools
    never see, and annotates its context as ``ToolCallContext[RunContext]``. It is None
    for every other tool. ``progress`` reports how far the call is
    to whoever listens (an MCP client of ``greenroom serve``); None when nobody does.
    """

    call_id: str
    run_id: str
    tool_name: str
    logger: logging.Logger = attrs.field(factory=lambda: logging.getLogger("greenroom.tools"))
    run: RunT | None = attrs.field(default=None, repr=False)
    progress: Progress | None = attrs.field(default=None, repr=False)


@runtime_checkable
class Tool(Protocol):
    """The contract every tool meets.

    ``timeout`` is in seconds (None: the agent's default). ``validate_args`` is optional:
    when present it runs after the JSON Schema check and returns a list of problems.
    """

    @property
    def descriptor(self) -> ToolDescriptor: ...

    @property
    def timeout(self) -> float | None: ...

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> Any: ...
