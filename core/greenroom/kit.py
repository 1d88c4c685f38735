"""The kit: helpers greenroom's own plugins share, for plugin authors who want the same.

``greenroom`` holds what agent builders and plugin authors use (tools, plugins, the run,
its events). The kit holds the helpers behind greenroom's own plugins: token counts of
definitions and their per-catalog costs, memos and on-disk caches keyed by a catalog's
digest, the query grammar's pieces, tool-name globs, safe files, bounded JSON arguments,
the CLI's live view and its one-line error exit (``fail``), ``McpRequest`` (what the MCP
request hooks are given) and ``observed`` (the context managers their implementations
answered, entered around a request), ``call_asker`` (whom an MCP server's
``elicitation/create`` reaches during the calls made in a context), and what the model
providers share (the history with every tool call answered, stable system sections
first, a call's arguments read, text UTF-8 can encode, the SDK imported when first
needed, the URL a failed SDK call went to, the search tool a provider offers when its
model searches deferred tools on the client side), and skills as ``greenroom serve``
offers them (``SkillTool``, the tool of one skill, with its ``SkillEntry`` and the
source that reads its files). They are public and kept stable like the rest, but a
plugin needs none of them to work. Names load on first use, like ``greenroom``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenroom._support.lazy import lazy_exports

if TYPE_CHECKING:
    from greenroom._support.arguments import MAX_ARGUMENT_DEPTH as MAX_ARGUMENT_DEPTH
    from greenroom._support.arguments import json_text as json_text
    from greenroom._support.arguments import parse_json_object as parse_json_object
    from greenroom._support.arguments import text_nesting_exceeds as text_nesting_exceeds
    from greenroom._support.compact import compact_json as compact_json
    from greenroom._support.digest_cache import DigestCache as DigestCache
    from greenroom._support.digest_cache import default_digest_cache as default_digest_cache
    from greenroom._support.digest_cache import use_digest_cache as use_digest_cache
    from greenroom._support.globs import GlobError as GlobError
    from greenroom._support.globs import check_glob as check_glob
    from greenroom._support.globs import matches as _glob_matches
    from greenroom._support.globs import matches_any as matches_any
    from greenroom._support.memo import IdentityMemo as IdentityMemo
    from greenroom._support.redact import public_url as public_url
    from greenroom._support.redact import redact_known as redact_known
    from greenroom._support.storage import FileInUse as FileInUse
    from greenroom._support.storage import NotARegularFile as NotARegularFile
    from greenroom._support.storage import read_regular_file as read_regular_file
    from greenroom._support.storage import state_dir as state_dir
    from greenroom._support.storage import write_bytes_atomic as write_bytes_atomic
    from greenroom._support.storage import write_json_atomic as write_json_atomic
    from greenroom.cli.app import fail as fail
    from greenroom.cli.live import LiveView as LiveView
    from greenroom.mcp.observe import McpRequest as McpRequest
    from greenroom.mcp.observe import observed as observed
    from greenroom.providers._messages import CLIENT_SEARCH_TOOL as CLIENT_SEARCH_TOOL
    from greenroom.providers._messages import SEARCH_DESCRIPTION as SEARCH_DESCRIPTION
    from greenroom.providers._messages import SEARCH_PARAMETERS as SEARCH_PARAMETERS
    from greenroom.providers._messages import found_tools as found_tools
    from greenroom.providers._messages import ordered_system as ordered_system
    from greenroom.providers._messages import paired_messages as paired_messages
    from greenroom.providers._messages import parse_arguments as parse_arguments
    from greenroom.providers._messages import without_lone_surrogates as without_lone_surrogates
    from greenroom.providers._sdk import error_endpoint as error_endpoint
    from greenroom.providers.options import import_sdk as import_sdk
    from greenroom.providers.options import missing_sdk as missing_sdk
    from greenroom.run.session import held_session as held_session
    from greenroom.search import keyword_search as keyword_search
    from greenroom.search import normalize_term as normalize_term
    from greenroom.search import passes_required as passes_required
    from greenroom.search import resolve_select as resolve_select
    from greenroom.search import sort_scored as sort_scored
    from greenroom.search import tool_text as tool_text
    from greenroom.search import top_band as top_band
    from greenroom.skills.entry import SKILLS_EXTENSION as SKILLS_EXTENSION
    from greenroom.skills.entry import SkillEntry as SkillEntry
    from greenroom.skills.entry import SkillError as SkillError
    from greenroom.skills.entry import SkillFile as SkillFile
    from greenroom.skills.tool import SkillSource as SkillSource
    from greenroom.skills.tool import SkillTool as SkillTool
    from greenroom.tokens.accounting import message_tokens as message_tokens
    from greenroom.tokens.counting import chars4 as chars4
    from greenroom.tokens.counting import count_tokens_upto as count_tokens_upto
    from greenroom.tokens.counting import parameters_json as parameters_json
    from greenroom.tokens.counting import tool_json as tool_json
    from greenroom.tokens.counting import tool_tokens as tool_tokens
    from greenroom.tokens.tool_costs import CostField as CostField
    from greenroom.tokens.tool_costs import tool_cost as _descriptor_cost
    from greenroom.tokens.tool_costs import tool_costs as _descriptor_costs
    from greenroom.tools.base import Asker as Asker
    from greenroom.tools.base import call_asker as call_asker
    from greenroom.tools.catalog import descriptors_digest as descriptors_digest
    from greenroom.tools.catalog import peek_schema as peek_schema

    glob_matches = _glob_matches
    descriptor_cost = _descriptor_cost
    descriptor_costs = _descriptor_costs

_EXPORTS: dict[str, str] = {
    "IdentityMemo": "greenroom._support.memo",
    "LiveView": "greenroom.cli.live",
    "fail": "greenroom.cli.app",
    "GlobError": "greenroom._support.globs",
    "check_glob": "greenroom._support.globs",
    "glob_matches": "greenroom._support.globs:matches",
    "matches_any": "greenroom._support.globs",
    "compact_json": "greenroom._support.compact",
    "count_tokens_upto": "greenroom.tokens.counting",
    "chars4": "greenroom.tokens.counting",
    "parameters_json": "greenroom.tokens.counting",
    "tool_json": "greenroom.tokens.counting",
    "tool_tokens": "greenroom.tokens.counting",
    "CostField": "greenroom.tokens.tool_costs",
    "descriptor_cost": "greenroom.tokens.tool_costs:tool_cost",
    "descriptor_costs": "greenroom.tokens.tool_costs:tool_costs",
    "descriptors_digest": "greenroom.tools.catalog",
    "peek_schema": "greenroom.tools.catalog",
    "json_text": "greenroom._support.arguments",
    "parse_json_object": "greenroom._support.arguments",
    "text_nesting_exceeds": "greenroom._support.arguments",
    "MAX_ARGUMENT_DEPTH": "greenroom._support.arguments",
    "message_tokens": "greenroom.tokens.accounting",
    "normalize_term": "greenroom.search",
    "passes_required": "greenroom.search",
    "resolve_select": "greenroom.search",
    "sort_scored": "greenroom.search",
    "top_band": "greenroom.search",
    "tool_text": "greenroom.search",
    "keyword_search": "greenroom.search",
    "SKILLS_EXTENSION": "greenroom.skills.entry",
    "SkillEntry": "greenroom.skills.entry",
    "SkillError": "greenroom.skills.entry",
    "SkillFile": "greenroom.skills.entry",
    "SkillSource": "greenroom.skills.tool",
    "SkillTool": "greenroom.skills.tool",
    "state_dir": "greenroom._support.storage",
    "write_bytes_atomic": "greenroom._support.storage",
    "write_json_atomic": "greenroom._support.storage",
    "FileInUse": "greenroom._support.storage",
    "NotARegularFile": "greenroom._support.storage",
    "read_regular_file": "greenroom._support.storage",
    "DigestCache": "greenroom._support.digest_cache",
    "default_digest_cache": "greenroom._support.digest_cache",
    "use_digest_cache": "greenroom._support.digest_cache",
    "held_session": "greenroom.run.session",
    "public_url": "greenroom._support.redact",
    "McpRequest": "greenroom.mcp.observe",
    "observed": "greenroom.mcp.observe",
    "Asker": "greenroom.tools.base",
    "call_asker": "greenroom.tools.base",
    "redact_known": "greenroom._support.redact",
    "CLIENT_SEARCH_TOOL": "greenroom.providers._messages",
    "SEARCH_DESCRIPTION": "greenroom.providers._messages",
    "SEARCH_PARAMETERS": "greenroom.providers._messages",
    "found_tools": "greenroom.providers._messages",
    "ordered_system": "greenroom.providers._messages",
    "paired_messages": "greenroom.providers._messages",
    "parse_arguments": "greenroom.providers._messages",
    "without_lone_surrogates": "greenroom.providers._messages",
    "error_endpoint": "greenroom.providers._sdk",
    "import_sdk": "greenroom.providers.options",
    "missing_sdk": "greenroom.providers.options",
}
"""Every kit name -> the module that defines it (``module:attribute`` when renamed)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
