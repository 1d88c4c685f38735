"""deferred-tools: keep tool schemas deferred until the model searches for them.

Registered through the ``greenroom.plugins`` entry point as ``deferred-tools``.
"""

from greenroom_deferred.answers import format_functions
from greenroom_deferred.config import DeferredConfig, RetentionConfig, Rule
from greenroom_deferred.descriptors import CLIENT_SEARCH_CALL, DISPATCH_TOOL, LOAD_TOOL, OWN_TOOLS, SEARCH_TOOL
from greenroom_deferred.placing.retention import BetaState, breakeven, should_redefer
from greenroom_deferred.plugin import DeferredToolsPlugin
from greenroom_deferred.state import DeferralState, Placement, PlacementSource

__all__ = [
    "CLIENT_SEARCH_CALL",
    "DISPATCH_TOOL",
    "LOAD_TOOL",
    "OWN_TOOLS",
    "SEARCH_TOOL",
    "BetaState",
    "DeferralState",
    "DeferredConfig",
    "DeferredToolsPlugin",
    "Placement",
    "PlacementSource",
    "RetentionConfig",
    "Rule",
    "breakeven",
    "format_functions",
    "should_redefer",
]
