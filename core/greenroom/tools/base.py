"""What a tool is: its descriptor, its result, the context of one call, the protocol.

A tool is a descriptor (name, description, JSON Schema of its parameters) plus an async
``execute(args, ctx)``. Tools see only their arguments and a small ``ToolCallContext``;
they cannot reach other tools, plugins or runtime state.
"""

from __future__ import annotations

import base64
import json
import logging
import re
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
    eager_hint: str | None = None
    """Who asks that the tool start eager, in a few words (``_meta["anthropic/alwaysLoad"]``,
    ``always_load of MCP server 'git'``); None when nobody does. A hint, weaker than
    ``deferrable``: a placement (deferred tools) honours it unless the user's own rules
    say otherwise, and never defers it on its own account (learned use, idleness)."""

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

    def problem(self) -> str | None:
        """Why a provider would refuse the part, in a few words (it refuses the whole
        request over it); None when it can be sent: ``data`` is base64, and an image's
        bytes begin as those of the type it names do (PNG, JPEG, GIF, WebP)."""
        try:
            raw = base64.b64decode(self.data, validate=True)
        except ValueError:  # binascii.Error too: a character base64 has not, a bad padding
            return "its data is not valid base64"
        if not raw:
            return "its data is empty"
        image = _SIGNATURES.get(self.mime_type.partition(";")[0].strip().lower()) if self.kind == "image" else None
        if image is not None and not image[1].match(raw):
            return f"its bytes are not a {image[0]} image"
        return None


_SIGNATURES = {
    "image/png": ("PNG", re.compile(rb"\x89PNG\r\n\x1a\n")),
    "image/jpeg": ("JPEG", re.compile(rb"\xff\xd8\xff")),
    "image/gif": ("GIF", re.compile(rb"GIF8[79]a")),
    "image/webp": ("WebP", re.compile(rb"RIFF.{4}WEBP", re.DOTALL)),
}
"""How the image types providers take begin (their files' magic numbers), by MIME type."""


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

        Every tool's result enters a run here (an MCP server's too), so this is where a
        part a provider would refuse (``MediaPart.problem``) is left out: the text says
        why in its place, and the model reads that instead of the request failing.
        """
        result = cls._made_from(value)
        return result._sendable() if result.parts else result

    def _sendable(self) -> ToolResult:
        """This result without the parts a provider would refuse, each named with why."""
        problems = [part.problem() for part in self.parts]
        if not any(problems):
            return self
        content = self.content
        for part, problem in zip(self.parts, problems, strict=True):
            if problem is None:
                continue
            note = f"[{part.kind}: {part.mime_type}, left out: {problem}]"
            shown = part.placeholder()
            content = content.replace(shown, note, 1) if shown in content else "\n".join(filter(None, (content, note)))
        kept = tuple(part for part, problem in zip(self.parts, problems, strict=True) if problem is None)
        return attrs.evolve(self, content=content, parts=kept)

    @classmethod
    def _made_from(cls, value: Any) -> ToolResult:
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

Asker = Callable[[Any], Awaitable[Any]]
"""Put a question a call's source asks to the person behind the call: an MCP server's
``elicitation/create`` params in, its answer out (an ``ElicitResult``, or the
``ErrorData`` that refuses it)."""

call_asker: ContextVar[Asker | None] = ContextVar("greenroom_call_asker", default=None)
"""Who the calls made in this context can ask (``greenroom serve`` sets it to the MCP
client that made the call); None: nobody, and a server that asks is refused."""


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
