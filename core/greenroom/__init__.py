"""greenroom: deferred tool schemas, tool search and a plugin-based agent runtime.

Plugin authors need only ``hookimpl`` and ``Plugin``; tool authors only ``tool``.
"""

from greenroom.config import AgentConfig, ConfigError
from greenroom.context import Decision, RunContext, RunOutcome
from greenroom.events import Event, EventBus
from greenroom.models import (
    HostedSearch,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ProviderContent,
    RequestDraft,
    SystemSection,
    ToolCall,
    Usage,
    supports_native_tool_search,
)
from greenroom.plugins import Plugin, PluginHookError, hookimpl, make_plugin_host
from greenroom.runtime import Runtime
from greenroom.search import Ranking, ScoredTool, SearchQuery
from greenroom.session import Session
from greenroom.state import Scope, Snapshot, StateRegistry, ToolPriors, ToolUsage
from greenroom.tools import Tool, ToolCallContext, ToolDescriptor, ToolResult, tool
from greenroom.tools.toolset import ToolSet

__version__ = "0.1.0"

__all__ = [
    "AgentConfig",
    "ConfigError",
    "Decision",
    "Event",
    "EventBus",
    "HostedSearch",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "Plugin",
    "PluginHookError",
    "ProviderContent",
    "Ranking",
    "RequestDraft",
    "RunContext",
    "RunOutcome",
    "Runtime",
    "Scope",
    "ScoredTool",
    "SearchQuery",
    "Session",
    "Snapshot",
    "StateRegistry",
    "SystemSection",
    "Tool",
    "ToolCall",
    "ToolCallContext",
    "ToolDescriptor",
    "ToolPriors",
    "ToolResult",
    "ToolSet",
    "ToolUsage",
    "Usage",
    "hookimpl",
    "make_plugin_host",
    "supports_native_tool_search",
    "tool",
]
