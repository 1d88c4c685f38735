"""Tools: descriptors, results, function tools, catalogs, groups and the tool set.

``from greenroom.tools import ...`` gives the names a tool author needs; the modules
inside each hold one job (``base``, ``functions``, ``catalog``, ``groups``, ``toolset``,
``schema``).
"""

from greenroom.tools.base import Deferrable, MediaPart, Tool, ToolCallContext, ToolDescriptor, ToolResult
from greenroom.tools.catalog import CatalogError, CatalogTool, load_catalog
from greenroom.tools.functions import FunctionTool, ToolFunc, tool

__all__ = [
    "CatalogError",
    "CatalogTool",
    "Deferrable",
    "FunctionTool",
    "MediaPart",
    "Tool",
    "ToolCallContext",
    "ToolDescriptor",
    "ToolFunc",
    "ToolResult",
    "load_catalog",
    "tool",
]
