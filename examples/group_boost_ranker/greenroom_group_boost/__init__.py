"""An example third-party ranker for greenroom: tools of the group named in the query
rank higher.

Install it with ``pip install ./examples/group_boost_ranker`` and turn it on in the
config (it is opt-in)::

    [plugins]
    enable = ["group-boost"]

    [plugins.group-boost]
    min_word_length = 3

The search-ranking plugin fuses this ranking with its own (weight ``default_weight``,
or ``weights = {"group-boost": 2.0}`` under ``[plugins.search-ranking]``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from greenroom import Plugin, Ranking, RunContext, ScoredTool, SearchQuery, ToolDescriptor, hookimpl

_WORDS = re.compile(r"[^\W_]+")


@attrs.frozen
class GroupBoostConfig:
    """Options of the group-boost ranker.

    Args:
        min_word_length: Query words shorter than this never name a group.
    """

    min_word_length: int = 3


class GroupBoostPlugin(Plugin):
    """Rank the tools whose group is named in the query; abstain when none is."""

    name = "group-boost"
    config_class = GroupBoostConfig
    default_enabled = False  # installed, but active only when [plugins] enable names it

    @hookimpl
    def greenroom_rank_tools(
        self, ctx: RunContext | None, query: SearchQuery, candidates: Sequence[ToolDescriptor]
    ) -> Ranking | None:
        if query.mode != "keywords":
            return None
        terms = {t for t in query.terms if len(t) >= self.config.min_word_length}
        scored = []
        for tool in candidates:
            if not tool.group:
                continue
            group_words = set(_WORDS.findall(tool.group.lower()))
            hits = len(terms & group_words) + (tool.group.lower() in terms)
            if hits:
                scored.append(ScoredTool(tool.name, float(hits)))
        if not scored:
            return None
        scored.sort(key=lambda s: (-s.score, s.name))
        return Ranking(self.name, tuple(scored))
