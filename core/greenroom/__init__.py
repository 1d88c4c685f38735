"""greenroom: deferred tool schemas, tool search and a plugin-based agent runtime.

This namespace is the whole public surface: tool authors need ``tool``, plugin authors
``Plugin``, ``hookimpl`` and what their hooks receive, and first-party plugins import
nothing else. Names load on first use, so ``import greenroom`` (and ``greenroom --help``)
pays only for what a command touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from greenroom.accounting import message_tokens
    from greenroom.cli.live import LiveView
    from greenroom.compose import build_runtime, load_runtime_config
    from greenroom.config import AgentConfig, ConfigError, RuntimeConfig
    from greenroom.context import Decision, RunContext, RunOutcome
    from greenroom.events import (
        Event,
        EventBus,
        GroupLoaded,
        PluginError,
        PluginWarning,
        RequestSent,
        ToolExecuted,
        TraceWriter,
    )
    from greenroom.failures import PluginHookError, RunFailure
    from greenroom.hookspecs import hookspec
    from greenroom.models import (
        HostedSearch,
        Message,
        Model,
        ModelError,
        ModelRequest,
        ModelResponse,
        ProviderContent,
        ProviderFactory,
        RequestDraft,
        SystemSection,
        ToolCall,
        ToolPlacement,
        Usage,
        supports_native_tool_search,
    )
    from greenroom.plugins import Plugin, hookimpl, make_plugin_host
    from greenroom.providers.scripted import PolicyModel
    from greenroom.redact import public_url
    from greenroom.runtime import Runtime
    from greenroom.search import (
        Ranking,
        ScoredTool,
        SearchQuery,
        keyword_search,
        normalize_term,
        passes_required,
        resolve_select,
        sort_scored,
        tool_text,
        top_band,
    )
    from greenroom.session import Session, SessionError
    from greenroom.state import Scope, Snapshot, StateRegistry, ToolPriors, ToolUsage
    from greenroom.storage import state_dir, write_json_atomic
    from greenroom.tokens import chars4, compact_json, count_tokens, parameters_json, tool_json, tool_tokens
    from greenroom.tools import (
        CatalogError,
        CatalogTool,
        FunctionTool,
        Tool,
        ToolCallContext,
        ToolDescriptor,
        ToolResult,
        load_catalog,
        tool,
    )
    from greenroom.tools.groups import ToolGroup
    from greenroom.tools.toolset import ToolSet

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AgentConfig": "greenroom.config",
    "ConfigError": "greenroom.config",
    "RuntimeConfig": "greenroom.config",
    "build_runtime": "greenroom.compose",
    "load_runtime_config": "greenroom.compose",
    "Decision": "greenroom.context",
    "RunContext": "greenroom.context",
    "RunOutcome": "greenroom.context",
    "RunFailure": "greenroom.failures",
    "Event": "greenroom.events",
    "EventBus": "greenroom.events",
    "GroupLoaded": "greenroom.events",
    "PluginError": "greenroom.events",
    "PluginWarning": "greenroom.events",
    "TraceWriter": "greenroom.events",
    "RequestSent": "greenroom.events",
    "ToolExecuted": "greenroom.events",
    "LiveView": "greenroom.cli.live",
    "hookspec": "greenroom.hookspecs",
    "HostedSearch": "greenroom.models",
    "Message": "greenroom.models",
    "Model": "greenroom.models",
    "ModelError": "greenroom.models",
    "ModelRequest": "greenroom.models",
    "ModelResponse": "greenroom.models",
    "ProviderContent": "greenroom.models",
    "ProviderFactory": "greenroom.models",
    "RequestDraft": "greenroom.models",
    "SystemSection": "greenroom.models",
    "ToolCall": "greenroom.models",
    "ToolPlacement": "greenroom.models",
    "Usage": "greenroom.models",
    "supports_native_tool_search": "greenroom.models",
    "Plugin": "greenroom.plugins",
    "PluginHookError": "greenroom.failures",
    "hookimpl": "greenroom.plugins",
    "make_plugin_host": "greenroom.plugins",
    "PolicyModel": "greenroom.providers.scripted",
    "message_tokens": "greenroom.accounting",
    "public_url": "greenroom.redact",
    "Runtime": "greenroom.runtime",
    "Ranking": "greenroom.search",
    "ScoredTool": "greenroom.search",
    "SearchQuery": "greenroom.search",
    "keyword_search": "greenroom.search",
    "normalize_term": "greenroom.search",
    "passes_required": "greenroom.search",
    "resolve_select": "greenroom.search",
    "sort_scored": "greenroom.search",
    "tool_text": "greenroom.search",
    "top_band": "greenroom.search",
    "Session": "greenroom.session",
    "SessionError": "greenroom.session",
    "Scope": "greenroom.state",
    "Snapshot": "greenroom.state",
    "StateRegistry": "greenroom.state",
    "ToolPriors": "greenroom.state",
    "ToolUsage": "greenroom.state",
    "state_dir": "greenroom.storage",
    "write_json_atomic": "greenroom.storage",
    "chars4": "greenroom.tokens",
    "compact_json": "greenroom.tokens",
    "count_tokens": "greenroom.tokens",
    "parameters_json": "greenroom.tokens",
    "tool_json": "greenroom.tokens",
    "tool_tokens": "greenroom.tokens",
    "CatalogError": "greenroom.tools",
    "CatalogTool": "greenroom.tools",
    "FunctionTool": "greenroom.tools",
    "Tool": "greenroom.tools",
    "ToolCallContext": "greenroom.tools",
    "ToolDescriptor": "greenroom.tools",
    "ToolResult": "greenroom.tools",
    "load_catalog": "greenroom.tools",
    "tool": "greenroom.tools",
    "ToolGroup": "greenroom.tools.groups",
    "ToolSet": "greenroom.tools.toolset",
}

__all__ = [
    "AgentConfig",
    "CatalogError",
    "CatalogTool",
    "ConfigError",
    "Decision",
    "Event",
    "EventBus",
    "FunctionTool",
    "GroupLoaded",
    "HostedSearch",
    "LiveView",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "Plugin",
    "PluginError",
    "PluginHookError",
    "PluginWarning",
    "PolicyModel",
    "ProviderContent",
    "ProviderFactory",
    "Ranking",
    "RequestDraft",
    "RequestSent",
    "RunContext",
    "RunFailure",
    "RunOutcome",
    "Runtime",
    "RuntimeConfig",
    "Scope",
    "ScoredTool",
    "SearchQuery",
    "Session",
    "SessionError",
    "Snapshot",
    "StateRegistry",
    "SystemSection",
    "Tool",
    "ToolCall",
    "ToolCallContext",
    "ToolDescriptor",
    "ToolExecuted",
    "ToolGroup",
    "ToolPlacement",
    "ToolPriors",
    "ToolResult",
    "ToolSet",
    "ToolUsage",
    "TraceWriter",
    "Usage",
    "build_runtime",
    "chars4",
    "compact_json",
    "count_tokens",
    "hookimpl",
    "hookspec",
    "keyword_search",
    "load_catalog",
    "load_runtime_config",
    "make_plugin_host",
    "message_tokens",
    "normalize_term",
    "parameters_json",
    "passes_required",
    "public_url",
    "resolve_select",
    "sort_scored",
    "state_dir",
    "supports_native_tool_search",
    "tool",
    "tool_json",
    "tool_text",
    "tool_tokens",
    "top_band",
    "write_json_atomic",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'greenroom' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
