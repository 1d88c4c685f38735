"""greenroom: deferred tool schemas, tool search and a plugin-based agent runtime.

This namespace is the whole public surface: tool authors need ``tool``, plugin authors
``Plugin``, ``hookimpl`` and what their hooks receive, a server of MCP clients the run it
steps through for each client (``Runtime.start_run`` with a ``RunFilter``, ``Run``) and
the upstream servers it passes through (``McpServer``), and first-party plugins import
nothing else. Names load on first use, so ``import greenroom`` (and ``greenroom --help``)
pays only for what a command touches.

``_EXPORTS`` is the one list of that surface: ``__all__`` is made from it, and the
``TYPE_CHECKING`` block repeats it for type checkers, one ``X as X`` re-export per name
(tests/core/test_exports.py holds the two together). Classes and functions say they
are ``greenroom.X`` (their ``__module__``), wherever they are defined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenroom._support.lazy import lazy_exports

if TYPE_CHECKING:
    # `X as X` marks a re-export for strict type checkers (mypy --no-implicit-reexport,
    # pyright on a py.typed package); a name exported under another one is imported
    # privately and assigned at the end.
    from greenroom.compose.build import abuild_runtime as abuild_runtime
    from greenroom.compose.build import build_runtime as build_runtime
    from greenroom.compose.build import load_runtime_config as load_runtime_config
    from greenroom.compose.build import plugin_config as plugin_config
    from greenroom.config import AgentConfig as AgentConfig
    from greenroom.config import ConfigError as ConfigError
    from greenroom.config import RuntimeConfig as RuntimeConfig
    from greenroom.events import ClientCalled as ClientCalled
    from greenroom.events import Event as Event
    from greenroom.events import EventBus as EventBus
    from greenroom.events import GroupLoaded as GroupLoaded
    from greenroom.events import MediaDropped as MediaDropped
    from greenroom.events import PluginError as PluginError
    from greenroom.events import PluginWarning as PluginWarning
    from greenroom.events import Rejection as Rejection
    from greenroom.events import RequestSent as RequestSent
    from greenroom.events import ResponseReceived as ResponseReceived
    from greenroom.events import RunFinished as RunFinished
    from greenroom.events import RunStarted as RunStarted
    from greenroom.events import ToolCallRejected as ToolCallRejected
    from greenroom.events import ToolCallResolved as ToolCallResolved
    from greenroom.events import ToolExecuted as ToolExecuted
    from greenroom.events import ToolUnusable as ToolUnusable
    from greenroom.events import TraceWriter as TraceWriter
    from greenroom.failures import PluginHookError as PluginHookError
    from greenroom.failures import RunFailure as RunFailure
    from greenroom.hookspecs import hookspec as hookspec
    from greenroom.mcp.server import McpServer as McpServer
    from greenroom.models import HostedSearch as HostedSearch
    from greenroom.models import Message as Message
    from greenroom.models import Model as Model
    from greenroom.models import ModelError as ModelError
    from greenroom.models import ModelRequest as ModelRequest
    from greenroom.models import ModelResponse as ModelResponse
    from greenroom.models import ProviderContent as ProviderContent
    from greenroom.models import ProviderFactory as ProviderFactory
    from greenroom.models import RequestDraft as RequestDraft
    from greenroom.models import StreamingModel as StreamingModel
    from greenroom.models import SystemSection as SystemSection
    from greenroom.models import TextDelta as TextDelta
    from greenroom.models import ToolCall as ToolCall
    from greenroom.models import ToolPlacement as ToolPlacement
    from greenroom.models import Usage as Usage
    from greenroom.models import supports_native_tool_search as supports_native_tool_search
    from greenroom.models import supports_programmatic_calls as supports_programmatic_calls
    from greenroom.plugins.discovery import Plugin as Plugin
    from greenroom.plugins.discovery import discover as _discover_plugins
    from greenroom.plugins.discovery import hookimpl as hookimpl
    from greenroom.plugins.discovery import make_plugin_host as make_plugin_host
    from greenroom.plugins.readiness import Readiness as Readiness
    from greenroom.providers._sdk import SDKModel as SDKModel
    from greenroom.providers.base import ProviderModel as ProviderModel
    from greenroom.providers.errors import ProviderConnectionError as ProviderConnectionError
    from greenroom.providers.errors import ProviderError as ProviderError
    from greenroom.providers.errors import ProviderResponseError as ProviderResponseError
    from greenroom.providers.errors import ProviderTimeoutError as ProviderTimeoutError
    from greenroom.providers.errors import ProviderToolCallError as ProviderToolCallError
    from greenroom.providers.errors import error_for_status as error_for_status
    from greenroom.providers.options import ProviderOptions as ProviderOptions
    from greenroom.providers.options import parse_provider_options as parse_provider_options
    from greenroom.providers.retry import RetryPolicy as RetryPolicy
    from greenroom.providers.retry import parse_retry_after as parse_retry_after
    from greenroom.providers.scripted import PolicyModel as PolicyModel
    from greenroom.run.context import Decision as Decision
    from greenroom.run.context import RunContext as RunContext
    from greenroom.run.context import RunKind as RunKind
    from greenroom.run.context import RunOutcome as RunOutcome
    from greenroom.run.context import current_run as current_run
    from greenroom.run.driver import Run as Run
    from greenroom.run.limits import Truncation as Truncation
    from greenroom.run.policy import HiddenBy as HiddenBy
    from greenroom.run.policy import HideReason as HideReason
    from greenroom.run.policy import ToolPolicy as ToolPolicy
    from greenroom.run.policy import ToolScope as ToolScope
    from greenroom.run.runtime import Runtime as Runtime
    from greenroom.run.scope import RunFilter as RunFilter
    from greenroom.run.session import Session as Session
    from greenroom.run.session import SessionError as SessionError
    from greenroom.run.session import SessionOwnerError as SessionOwnerError
    from greenroom.run.streaming import RunStream as RunStream
    from greenroom.run.views import Catalog as Catalog
    from greenroom.run.views import GroupView as GroupView
    from greenroom.run.views import ScopedTools as ScopedTools
    from greenroom.search import Ranking as Ranking
    from greenroom.search import ScoredTool as ScoredTool
    from greenroom.search import SearchQuery as SearchQuery
    from greenroom.state import Scope as Scope
    from greenroom.state import Scripting as Scripting
    from greenroom.state import Snapshot as Snapshot
    from greenroom.state import StateRegistry as StateRegistry
    from greenroom.state import ToolPriors as ToolPriors
    from greenroom.state import ToolUsage as ToolUsage
    from greenroom.tokens.counting import count_tokens as count_tokens
    from greenroom.tools import CatalogError as CatalogError
    from greenroom.tools import CatalogTool as CatalogTool
    from greenroom.tools import FunctionTool as FunctionTool
    from greenroom.tools import MediaPart as MediaPart
    from greenroom.tools import Tool as Tool
    from greenroom.tools import ToolCallContext as ToolCallContext
    from greenroom.tools import ToolDescriptor as ToolDescriptor
    from greenroom.tools import ToolResult as ToolResult
    from greenroom.tools import load_catalog as load_catalog
    from greenroom.tools import tool as tool
    from greenroom.tools.groups import ToolGroup as ToolGroup
    from greenroom.tools.schema.problem import SchemaFault as SchemaFault
    from greenroom.tools.schema.problem import SchemaProblem as SchemaProblem
    from greenroom.tools.toolset import ToolSet as ToolSet

    discover_plugins = _discover_plugins

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "abuild_runtime": "greenroom.compose.build",
    "build_runtime": "greenroom.compose.build",
    "load_runtime_config": "greenroom.compose.build",
    "plugin_config": "greenroom.compose.build",
    "AgentConfig": "greenroom.config",
    "ConfigError": "greenroom.config",
    "Readiness": "greenroom.plugins.readiness",
    "RuntimeConfig": "greenroom.config",
    "ClientCalled": "greenroom.events",
    "Rejection": "greenroom.events",
    "ResponseReceived": "greenroom.events",
    "RunFinished": "greenroom.events",
    "RunStarted": "greenroom.events",
    "ToolCallRejected": "greenroom.events",
    "ToolCallResolved": "greenroom.events",
    "Event": "greenroom.events",
    "EventBus": "greenroom.events",
    "GroupLoaded": "greenroom.events",
    "MediaDropped": "greenroom.events",
    "PluginError": "greenroom.events",
    "PluginWarning": "greenroom.events",
    "RequestSent": "greenroom.events",
    "ToolExecuted": "greenroom.events",
    "ToolUnusable": "greenroom.events",
    "TraceWriter": "greenroom.events",
    "PluginHookError": "greenroom.failures",
    "RunFailure": "greenroom.failures",
    "hookspec": "greenroom.hookspecs",
    "McpServer": "greenroom.mcp.server",
    "HostedSearch": "greenroom.models",
    "Message": "greenroom.models",
    "Model": "greenroom.models",
    "ModelError": "greenroom.models",
    "ModelRequest": "greenroom.models",
    "ModelResponse": "greenroom.models",
    "StreamingModel": "greenroom.models",
    "TextDelta": "greenroom.models",
    "ProviderContent": "greenroom.models",
    "ProviderFactory": "greenroom.models",
    "RequestDraft": "greenroom.models",
    "SystemSection": "greenroom.models",
    "ToolCall": "greenroom.models",
    "ToolPlacement": "greenroom.models",
    "Usage": "greenroom.models",
    "supports_native_tool_search": "greenroom.models",
    "supports_programmatic_calls": "greenroom.models",
    "Plugin": "greenroom.plugins.discovery",
    "discover_plugins": "greenroom.plugins.discovery:discover",
    "hookimpl": "greenroom.plugins.discovery",
    "make_plugin_host": "greenroom.plugins.discovery",
    "ProviderModel": "greenroom.providers.base",
    "SDKModel": "greenroom.providers._sdk",
    "ProviderConnectionError": "greenroom.providers.errors",
    "ProviderError": "greenroom.providers.errors",
    "ProviderResponseError": "greenroom.providers.errors",
    "ProviderTimeoutError": "greenroom.providers.errors",
    "ProviderToolCallError": "greenroom.providers.errors",
    "error_for_status": "greenroom.providers.errors",
    "ProviderOptions": "greenroom.providers.options",
    "parse_provider_options": "greenroom.providers.options",
    "RetryPolicy": "greenroom.providers.retry",
    "parse_retry_after": "greenroom.providers.retry",
    "PolicyModel": "greenroom.providers.scripted",
    "Decision": "greenroom.run.context",
    "RunContext": "greenroom.run.context",
    "RunKind": "greenroom.run.context",
    "RunOutcome": "greenroom.run.context",
    "current_run": "greenroom.run.context",
    "Run": "greenroom.run.driver",
    "Truncation": "greenroom.run.limits",
    "RunStream": "greenroom.run.streaming",
    "HiddenBy": "greenroom.run.policy",
    "HideReason": "greenroom.run.policy",
    "ToolPolicy": "greenroom.run.policy",
    "ToolScope": "greenroom.run.policy",
    "Catalog": "greenroom.run.views",
    "GroupView": "greenroom.run.views",
    "ScopedTools": "greenroom.run.views",
    "Runtime": "greenroom.run.runtime",
    "RunFilter": "greenroom.run.scope",
    "Ranking": "greenroom.search",
    "ScoredTool": "greenroom.search",
    "SearchQuery": "greenroom.search",
    "Session": "greenroom.run.session",
    "SessionError": "greenroom.run.session",
    "SessionOwnerError": "greenroom.run.session",
    "Scope": "greenroom.state",
    "Snapshot": "greenroom.state",
    "StateRegistry": "greenroom.state",
    "Scripting": "greenroom.state",
    "ToolPriors": "greenroom.state",
    "ToolUsage": "greenroom.state",
    "count_tokens": "greenroom.tokens.counting",
    "CatalogError": "greenroom.tools",
    "CatalogTool": "greenroom.tools",
    "FunctionTool": "greenroom.tools",
    "Tool": "greenroom.tools",
    "ToolCallContext": "greenroom.tools",
    "ToolDescriptor": "greenroom.tools",
    "ToolResult": "greenroom.tools",
    "MediaPart": "greenroom.tools",
    "load_catalog": "greenroom.tools",
    "tool": "greenroom.tools",
    "ToolGroup": "greenroom.tools.groups",
    "SchemaFault": "greenroom.tools.schema.problem",
    "SchemaProblem": "greenroom.tools.schema.problem",
    "ToolSet": "greenroom.tools.toolset",
}
"""Every public name -> the module that defines it (``module:attribute`` when the
attribute has another name there)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, present=True)
