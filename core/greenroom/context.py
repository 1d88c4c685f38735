"""What plugins see of a run (``RunContext``), what a gate decides, how a run ended."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import attrs

from greenroom import events as ev
from greenroom.config import AgentConfig
from greenroom.models import Usage
from greenroom.search import Ranking, ScoredTool, SearchQuery
from greenroom.state import (
    Scope,
    StateStore,
    ToolPriors,
    ToolUsage,
)
from greenroom.tools import ToolDescriptor, ToolResult
from greenroom.tools.toolset import ToolSet

if TYPE_CHECKING:
    from greenroom.runtime import Runtime
    from greenroom.session import Session


@attrs.frozen
class Decision:
    """What a BeforeToolExecute gate decided."""

    action: Literal["allow", "block", "answer"]
    reason: str = ""
    result: ToolResult | None = None

    @classmethod
    def allow(cls) -> Decision:
        return cls("allow")

    @classmethod
    def block(cls, reason: str) -> Decision:
        return cls("block", reason=reason)

    @classmethod
    def answer(cls, result: ToolResult | str) -> Decision:
        if isinstance(result, str):
            result = ToolResult(result)
        return cls("answer", result=result)


@attrs.frozen
class RunOutcome:
    run_id: str
    text: str
    steps: int
    stop_reason: Literal["final", "max_steps", "cancelled", "error"]
    usage: Usage
    error: str | None = None


class RunContext:
    """What plugins see of a run. Tools never see this."""

    def __init__(self, runtime: Runtime, session: Session, run_id: str, user_input: str) -> None:
        self.runtime = runtime
        self.session = session
        self.run_id = run_id
        self.input = user_input
        self.step = 0
        self.state = StateStore(runtime.registry, Scope.RUN)
        self.hidden: frozenset[str] = frozenset()
        self.usage_total = Usage()
        self._visible: tuple[int, frozenset[str], list[ToolDescriptor]] | None = None

    # shortcuts plugins use often
    @property
    def agent(self) -> AgentConfig:
        return self.runtime.agent

    @property
    def session_state(self) -> StateStore:
        return self.session.state

    @property
    def profile_state(self) -> StateStore:
        return self.runtime.profile_state

    @property
    def tools(self) -> ToolSet:
        return self.runtime.tools

    @property
    def usage(self) -> ToolUsage:
        return self.state[ToolUsage]

    @property
    def priors(self) -> ToolPriors:
        return self.profile_state[ToolPriors]

    def visible_descriptors(self) -> list[ToolDescriptor]:
        """Every tool this agent may use in this run (hidden tools removed); a fresh list,
        rebuilt only when the tool set or the hidden set changed."""
        tools = self.runtime.tools
        cached = self._visible
        if cached is None or cached[0] != tools.version or cached[1] is not self.hidden:
            visible = [d for d in tools.descriptors() if d.name not in self.hidden]
            cached = self._visible = (tools.version, self.hidden, visible)
        return list(cached[2])

    def emit(self, event: ev.Event) -> None:
        self.runtime.events.emit(event)

    async def search(
        self, query: SearchQuery, candidates: Sequence[ToolDescriptor]
    ) -> tuple[list[ScoredTool], list[Ranking]]:
        """Rank candidates through the search hooks (keyword fallback when no ranker)."""
        return await self.runtime.search(query, candidates, self)
