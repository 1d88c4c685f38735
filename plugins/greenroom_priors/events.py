"""Events of the priors-persistence plugin: priors loaded at RunStart, saved at RunEnd."""

from __future__ import annotations

import attrs

from greenroom import Event


@attrs.frozen
class PriorsLoaded(Event):
    kind: str = attrs.field(init=False, default="priors_load")
    agent_id: str = ""
    tools: int = 0
    sessions: int = 0
    source: str = ""

    def describe(self) -> str:
        return (
            f"priors loaded for {self.agent_id}: {self.tools} tools over {self.sessions} session(s) from {self.source}"
        )

    @property
    def style(self) -> str:
        return "dim"


@attrs.frozen
class PriorsSaved(Event):
    kind: str = attrs.field(init=False, default="priors_save")
    agent_id: str = ""
    tools: int = 0
    sessions: int = 0
