"""Tools: what the model sees and calls.

A tool is a descriptor (name, description, JSON Schema of its parameters) plus an async
``execute(args, ctx)``. Tools see only their arguments and a small ``ToolCallContext``;
they cannot reach other tools, plugins or runtime state.
"""

from __future__ import annotations

import enum
import functools
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import anyio
import anyio.to_thread
import attrs

from greenroom.schema import parse_docstring, schema_for_signature

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

    def to_json(self) -> dict[str, Any]:
        """The provider-neutral function definition: description, name, parameters."""
        return {"description": self.description, "name": self.name, "parameters": dict(self.parameters)}


@attrs.frozen
class ToolResult:
    """What a tool call produced, as the model will read it."""

    content: str
    is_error: bool = False
    structured: Any = None

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=message, is_error=True)

    @classmethod
    def from_value(cls, value: Any) -> ToolResult:
        """Turn whatever a tool function returned into a result."""
        if isinstance(value, ToolResult):
            return value
        if isinstance(value, str):
            return cls(content=value)
        if attrs.has(type(value)):
            value = attrs.asdict(value)
        try:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
        return cls(content=text, structured=value)


@attrs.frozen
class ToolCallContext:
    """All a tool may know about the call it serves."""

    call_id: str
    run_id: str
    tool_name: str
    logger: logging.Logger = attrs.field(factory=lambda: logging.getLogger("greenroom.tools"))


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


class FunctionTool:
    """A tool made from a Python function (sync functions run in a worker thread)."""

    def __init__(
        self,
        func: Callable[..., Any],
        descriptor: ToolDescriptor,
        *,
        timeout: float | None = None,
        validate_args: Callable[[dict[str, Any]], list[str]] | None = None,
    ) -> None:
        self.func = func
        self._descriptor = descriptor
        self._timeout = timeout
        self._is_async = inspect.iscoroutinefunction(func)
        self._wants_ctx = "ctx" in inspect.signature(func).parameters
        self._structured = _structured_params(func)
        if validate_args is not None:
            self.validate_args = validate_args

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    @property
    def timeout(self) -> float | None:
        return self._timeout

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        kwargs = dict(args)
        if self._structured:
            from greenroom.config import converter

            for pname, hint in self._structured.items():
                if pname in kwargs:
                    kwargs[pname] = converter.structure(kwargs[pname], hint)
        if self._wants_ctx:
            kwargs["ctx"] = ctx
        if self._is_async:
            return await self.func(**kwargs)
        # abandon_on_cancel: a timed-out sync function cannot be interrupted, but the
        # run must not wait for it.
        return await anyio.to_thread.run_sync(functools.partial(self.func, **kwargs), abandon_on_cancel=True)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tool {self._descriptor.name}>"


def _structured_params(func: Callable[..., Any]) -> dict[str, Any]:
    """Parameters whose JSON value must be turned into a Python type (Enum, attrs
    classes, tuples, or containers of them) before the function is called."""
    import typing

    try:
        hints = typing.get_type_hints(func)
    except Exception:
        return {}

    def needs(tp: Any) -> bool:
        if isinstance(tp, type) and (issubclass(tp, enum.Enum) or attrs.has(tp)):
            return True
        origin = typing.get_origin(tp)
        if origin in (tuple, set, frozenset):
            return True
        return any(needs(a) for a in typing.get_args(tp) if a is not Ellipsis)

    return {n: h for n, h in hints.items() if n not in ("return", "ctx") and needs(h)}


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    group: str | None = None,
    timeout: float | None = None,
    deferrable: Deferrable = "automatic",
) -> Any:
    """Make a tool from a function; the schema comes from its type hints and docstring.

    Supported parameter types: str, int, float, bool, list/tuple/set, dict, Optional and
    unions, Literal, Enum and nested attrs classes. Parameter descriptions come from the
    docstring's ``Args:`` (Google) or ``:param x:`` (Sphinx) sections. A parameter named
    ``ctx`` receives the ``ToolCallContext`` and is not shown to the model.
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        doc = parse_docstring(inspect.getdoc(f) or "")
        desc = description if description is not None else doc.summary
        if not desc:
            raise ValueError(f"tool {f.__name__!r} needs a description (docstring or description=)")
        params = schema_for_signature(f, doc.params, skip=("ctx",))
        descriptor = ToolDescriptor(
            name=name or f.__name__,
            description=desc,
            parameters=params,
            group=group,
            deferrable=deferrable,
        )
        return FunctionTool(f, descriptor, timeout=timeout)

    if func is not None:
        return wrap(func)
    return wrap


class CatalogTool:
    """A descriptor without an implementation, read from a catalog file.

    Catalog tools let a user inspect and benchmark a large catalog; calling one gives
    the model a clear error instead of a crash.
    """

    timeout: float | None = None

    def __init__(self, descriptor: ToolDescriptor, source: str) -> None:
        self._descriptor = descriptor
        self.source = source

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        return ToolResult.error(
            f"tool {self._descriptor.name!r} comes from the catalog {self.source} and has no "
            "implementation here; it can be searched and inspected but not executed"
        )


ToolFunc = Callable[..., Any | Awaitable[Any]]
