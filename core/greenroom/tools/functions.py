"""Tools made from Python functions: the ``@tool`` decorator and ``FunctionTool``."""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from greenroom._support.threads import run_in_thread
from greenroom.tools.base import Deferrable, ToolCallContext, ToolDescriptor
from greenroom.tools.schema.from_types import parse_docstring, schema_for_signature


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
        # a timed-out sync function cannot be interrupted, but the run does not wait for it;
        # a SystemExit, KeyboardInterrupt or GeneratorExit it raises is raised here, its call's failure
        return await run_in_thread(self.func, **kwargs)

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


ToolFunc = Callable[..., Any | Awaitable[Any]]
