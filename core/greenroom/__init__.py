"""greenroom: deferred tool schemas, tool search and a plugin-based agent runtime.

This namespace is the whole public surface: tool authors need ``tool``, plugin authors
``Plugin``, ``hookimpl`` and what their hooks receive, and first-party plugins import
nothing else. Names load on first use, so ``import greenroom`` (and ``greenroom --help``)
pays only for what a command touches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenroom._support.lazy import lazy_exports

if TYPE_CHECKING:
    from greenroom._support.arguments import MAX_ARGUMENT_DEPTH, json_text, parse_json_object
    from greenroom._support.digest_cache import DigestCache, default_digest_cache, use_digest_cache
    from greenroom._support.globs import GlobError, check_glob, matches_any
    from greenroom._support.globs import matches as glob_matches
    from greenroom._support.memo import IdentityMemo
    from greenroom._support.redact import public_url
    from greenroom._support.storage import FileInUse, state_dir, write_json_atomic
    from greenroom.build.compose import build_runtime, load_runtime_config
    from greenroom.cli.live import LiveView
    from greenroom.config import AgentConfig, ConfigError, RuntimeConfig
    from greenroom.events import (
        Event,
        EventBus,
        GroupLoaded,
        PluginError,
        PluginWarning,
        RequestSent,
        ToolExecuted,
        ToolUnusable,
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
    from greenroom.plugins.discovery import Plugin, hookimpl, make_plugin_host
    from greenroom.plugins.discovery import discover as discover_plugins
    from greenroom.providers.scripted import PolicyModel
    from greenroom.run.context import Decision, RunContext, RunOutcome
    from greenroom.run.policy import HiddenBy, HideReason, ToolPolicy, ToolScope
    from greenroom.run.views import Catalog, GroupView, ScopedTools
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
    from greenroom.session import Session, SessionError, SessionOwnerError, held_session
    from greenroom.state import Scope, Snapshot, StateRegistry, ToolPriors, ToolUsage
    from greenroom.tokens.accounting import message_tokens
    from greenroom.tokens.counting import (
        chars4,
        compact_json,
        count_tokens,
        count_tokens_upto,
        parameters_json,
        tool_json,
        tool_tokens,
    )
    from greenroom.tokens.tool_costs import CostField
    from greenroom.tokens.tool_costs import tool_cost as descriptor_cost
    from greenroom.tokens.tool_costs import tool_costs as descriptor_costs
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
    from greenroom.tools.catalog import descriptors_digest, peek_schema
    from greenroom.tools.groups import ToolGroup
    from greenroom.tools.schema.problem import SchemaFault, SchemaProblem
    from greenroom.tools.toolset import ToolSet

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AgentConfig": "greenroom.config",
    "ConfigError": "greenroom.config",
    "RuntimeConfig": "greenroom.config",
    "build_runtime": "greenroom.build.compose",
    "load_runtime_config": "greenroom.build.compose",
    "Decision": "greenroom.run.context",
    "RunContext": "greenroom.run.context",
    "RunOutcome": "greenroom.run.context",
    "RunFailure": "greenroom.failures",
    "Event": "greenroom.events",
    "EventBus": "greenroom.events",
    "GroupLoaded": "greenroom.events",
    "PluginError": "greenroom.events",
    "PluginWarning": "greenroom.events",
    "TraceWriter": "greenroom.events",
    "RequestSent": "greenroom.events",
    "ToolExecuted": "greenroom.events",
    "ToolUnusable": "greenroom.events",
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
    "Plugin": "greenroom.plugins.discovery",
    "PluginHookError": "greenroom.failures",
    "hookimpl": "greenroom.plugins.discovery",
    "make_plugin_host": "greenroom.plugins.discovery",
    "PolicyModel": "greenroom.providers.scripted",
    "message_tokens": "greenroom.tokens.accounting",
    "MAX_ARGUMENT_DEPTH": "greenroom._support.arguments",
    "json_text": "greenroom._support.arguments",
    "parse_json_object": "greenroom._support.arguments",
    "public_url": "greenroom._support.redact",
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
    "SessionOwnerError": "greenroom.session",
    "held_session": "greenroom.session",
    "Scope": "greenroom.state",
    "Snapshot": "greenroom.state",
    "StateRegistry": "greenroom.state",
    "ToolPriors": "greenroom.state",
    "ToolUsage": "greenroom.state",
    "FileInUse": "greenroom._support.storage",
    "state_dir": "greenroom._support.storage",
    "write_json_atomic": "greenroom._support.storage",
    "chars4": "greenroom.tokens.counting",
    "compact_json": "greenroom.tokens.counting",
    "count_tokens": "greenroom.tokens.counting",
    "count_tokens_upto": "greenroom.tokens.counting",
    "parameters_json": "greenroom.tokens.counting",
    "tool_json": "greenroom.tokens.counting",
    "tool_tokens": "greenroom.tokens.counting",
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
    "GlobError": "greenroom._support.globs",
    "check_glob": "greenroom._support.globs",
    "matches_any": "greenroom._support.globs",
    "glob_matches": "greenroom._support.globs:matches",
    "HiddenBy": "greenroom.run.policy",
    "HideReason": "greenroom.run.policy",
    "ToolPolicy": "greenroom.run.policy",
    "ToolScope": "greenroom.run.policy",
    "GroupView": "greenroom.run.views",
    "Catalog": "greenroom.run.views",
    "ScopedTools": "greenroom.run.views",
    "IdentityMemo": "greenroom._support.memo",
    "discover_plugins": "greenroom.plugins.discovery:discover",
    "ToolSet": "greenroom.tools.toolset",
    "DigestCache": "greenroom._support.digest_cache",
    "default_digest_cache": "greenroom._support.digest_cache",
    "use_digest_cache": "greenroom._support.digest_cache",
    "CostField": "greenroom.tokens.tool_costs",
    # greenroom.tokens.tool_costs is the module's own name there, so the functions go by others
    "descriptor_cost": "greenroom.tokens.tool_costs:tool_cost",
    "descriptor_costs": "greenroom.tokens.tool_costs:tool_costs",
    "descriptors_digest": "greenroom.tools.catalog",
    "peek_schema": "greenroom.tools.catalog",
    "SchemaFault": "greenroom.tools.schema.problem",
    "SchemaProblem": "greenroom.tools.schema.problem",
}

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "AgentConfig",
    "Catalog",
    "CatalogError",
    "CatalogTool",
    "ConfigError",
    "CostField",
    "Decision",
    "DigestCache",
    "Event",
    "EventBus",
    "FileInUse",
    "FunctionTool",
    "GlobError",
    "GroupLoaded",
    "GroupView",
    "HiddenBy",
    "HideReason",
    "HostedSearch",
    "IdentityMemo",
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
    "SchemaFault",
    "SchemaProblem",
    "Scope",
    "ScopedTools",
    "ScoredTool",
    "SearchQuery",
    "Session",
    "SessionError",
    "SessionOwnerError",
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
    "ToolPolicy",
    "ToolPriors",
    "ToolResult",
    "ToolScope",
    "ToolSet",
    "ToolUnusable",
    "ToolUsage",
    "TraceWriter",
    "Usage",
    "build_runtime",
    "chars4",
    "check_glob",
    "compact_json",
    "count_tokens",
    "count_tokens_upto",
    "default_digest_cache",
    "descriptor_cost",
    "descriptor_costs",
    "descriptors_digest",
    "discover_plugins",
    "glob_matches",
    "held_session",
    "hookimpl",
    "hookspec",
    "json_text",
    "keyword_search",
    "load_catalog",
    "load_runtime_config",
    "make_plugin_host",
    "matches_any",
    "message_tokens",
    "normalize_term",
    "parameters_json",
    "parse_json_object",
    "passes_required",
    "peek_schema",
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
    "use_digest_cache",
    "write_json_atomic",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
