"""The plugin's own tools as the model sees them: their names and descriptors."""

from __future__ import annotations

from greenroom import ToolDescriptor

SEARCH_TOOL = "ToolSearch"
DISPATCH_TOOL = "deferred_tool_call"
LOAD_TOOL = "load_tools"
OWN_TOOLS = frozenset((SEARCH_TOOL, DISPATCH_TOOL, LOAD_TOOL))

CLIENT_SEARCH_CALL = "tool_search"
"""The name a provider gives the call of a search its model runs on the client side
(OpenAI's ``tool_search`` in client execution mode): with the ``native`` strategy the
resolve hook turns it into a ``ToolSearch`` call (``tools.client_search``)."""


def search_descriptor(max_results: int) -> ToolDescriptor:
    return ToolDescriptor(
        name=SEARCH_TOOL,
        description=(
            "Find deferred tools and load their full schemas. Query forms: plain keywords "
            "('create issue'), '+word rest' to require a word, 'select:name_a,name_b' for exact "
            "names, or an empty query to browse."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords, +required words, or select:a,b."},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "description": f"How many tools to return (default {max_results}).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        deferrable="never",
    )


DISPATCH_DESCRIPTOR = ToolDescriptor(
    name=DISPATCH_TOOL,
    description="Call a deferred tool whose schema you have loaded.",
    parameters={
        "type": "object",
        "properties": {
            "tool_name": {"type": "string"},
            "arguments": {"type": "object", "description": "Matching that tool's schema."},
        },
        "required": ["tool_name", "arguments"],
        "additionalProperties": False,
    },
    deferrable="never",
)

LOAD_DESCRIPTOR = ToolDescriptor(
    name=LOAD_TOOL,
    description="Load a tool group from the catalog (all its tools, or only the names given).",
    parameters={
        "type": "object",
        "properties": {
            "group_id": {"type": "string", "description": "A group id from the catalog."},
            "tool_names": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Load only these tools of the group.",
            },
        },
        "required": ["group_id"],
        "additionalProperties": False,
    },
    deferrable="never",
)
