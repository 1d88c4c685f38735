"""Deferred tools behind the Responses API's ``tool_search``, executed on the client.

A request whose ``deferred`` names some of its tools sends them with
``"defer_loading": true``: grouped in a ``namespace`` per greenroom group (an MCP server,
a tool group), whose name and description the model sees up front, or alone when they
have no group (the model then sees their name and description). The loaded tools come
first, then the ``tool_search`` tool with ``"execution": "client"``
(``SEARCH_PARAMETERS``), then the deferred ones; at least one function stays loaded,
as the API requires. The set and the order come from the
request, which the plugin that defers them keeps fixed for a session: the tools array is
the same bytes on every step, and the cache keeps its prefix.

The model's ``tool_search_call`` becomes a call named ``CLIENT_SEARCH_TOOL``, which the
plugin that deferred the tools resolves to its own search tool, and the runtime runs
like any other (greenroom's ranking and priors answer it); its result goes back as the
``tool_search_output`` naming the same call, carrying the definitions of the deferred
tools it found (``found_tools``, in their namespaces). The API appends loaded tools at the end of the
context, so the prefix stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from greenroom import Message, ModelRequest, ToolDescriptor
from greenroom.kit import SEARCH_DESCRIPTION, SEARCH_PARAMETERS, found_tools

Function = Callable[[ToolDescriptor], dict[str, Any]]
"""A tool -> its function definition as the tools array carries it."""

SEARCH_TOOL_JSON: dict[str, Any] = {
    "type": "tool_search",
    "execution": "client",
    "description": SEARCH_DESCRIPTION,
    "parameters": SEARCH_PARAMETERS,
}

_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def namespace_name(group: str) -> str:
    """A group id as a namespace name (letters, digits, ``_`` and ``-``, at most 64)."""
    return _NOT_A_NAME.sub("_", group).strip("_")[:64] or "tools"


def namespace_description(group: str, tools: Sequence[ToolDescriptor]) -> str:
    """What the model reads of a namespace before its search loads any of it: the group
    and how many tools it has. No names: a catalog of many small groups (hundreds of
    namespaces) would pay for each on every step, and the search finds them by keywords."""
    return f"{len(tools)} tools of {group}, loaded by tool search."


def on_wire(request: ModelRequest) -> frozenset[str]:
    """The tools sent with ``defer_loading``: those of ``request.deferred`` that are sent,
    less the first tool when that would defer them all (one must stay loaded)."""
    if not request.deferred or not request.tools:
        return frozenset()
    names = frozenset(t.name for t in request.tools if t.name in request.deferred)
    if len(names) == len(request.tools):
        names -= {request.tools[0].name}
    return names


def _grouped(tools: Sequence[ToolDescriptor], function: Function, deferred: bool) -> list[dict[str, Any]]:
    """Function definitions, those of a group inside its namespace (in the order of each
    group's first tool)."""
    out: list[dict[str, Any]] = []
    spaces: dict[str, tuple[dict[str, Any], list[ToolDescriptor]]] = {}
    for t in tools:
        fn = {**function(t), "defer_loading": True} if deferred else function(t)
        if t.group is None:
            out.append(fn)
            continue
        name = namespace_name(t.group)
        if name not in spaces:
            space: dict[str, Any] = {"type": "namespace", "name": name, "description": "", "tools": []}
            spaces[name] = (space, [])
            out.append(space)
        spaces[name][0]["tools"].append(fn)
        spaces[name][1].append(t)
    for space, members in spaces.values():
        space["description"] = namespace_description(members[0].group or space["name"], members)
    return out


def search_tools(request: ModelRequest, function: Function, deferred: frozenset[str]) -> list[dict[str, Any]]:
    """The tools array: the loaded tools, ``tool_search``, then the deferred ones."""
    loaded = [function(t) for t in request.tools if t.name not in deferred]
    return [*loaded, SEARCH_TOOL_JSON, *_grouped([t for t in request.tools if t.name in deferred], function, True)]


def search_output(m: Message, request: ModelRequest, function: Function, deferred: frozenset[str]) -> dict[str, Any]:
    """The ``tool_search_output`` for a search's result: the deferred tools it found,
    as their namespaces (a tool it found that is loaded already, or that is not sent,
    needs no loading)."""
    by_name = {t.name: t for t in request.tools}
    found = [by_name[n] for n in found_tools(m) if n in deferred and n in by_name]
    # namespaces group what the namespace description promised, in the order found
    return {
        "type": "tool_search_output",
        "call_id": m.tool_call_id or "",
        "execution": "client",
        "tools": _full_namespaces(found, request, function, deferred),
    }


def _full_namespaces(
    found: Sequence[ToolDescriptor], request: ModelRequest, function: Function, deferred: frozenset[str]
) -> list[dict[str, Any]]:
    """The found tools grouped as in the tools array; each namespace keeps the description
    it has there (counted over all its deferred tools), so the model reads one namespace."""
    tools = _grouped(found, function, False)
    members: dict[str, list[ToolDescriptor]] = {}
    for t in request.tools:
        if t.group is not None and t.name in deferred:
            members.setdefault(namespace_name(t.group), []).append(t)
    for entry in tools:
        if entry.get("type") == "namespace" and entry["name"] in members:
            group = members[entry["name"]]
            entry["description"] = namespace_description(group[0].group or entry["name"], group)
    return tools


__all__ = ["SEARCH_TOOL_JSON", "namespace_name", "on_wire", "search_output", "search_tools"]
