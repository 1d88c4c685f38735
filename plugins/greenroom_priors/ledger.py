"""What the priors plugin keeps for one run, in the run (``Scope.RUN``): its ledger.

One runtime serves many runs at once and one plugin instance serves them all, so a
run's successful calls are tallied in the run's own state (``ctx.state[RunLedger]``),
which the runtime makes fresh for each run. The store's keeper
(``greenroom_priors.keeper``) holds a ledger only while it has counts to checkpoint.
"""

from __future__ import annotations

from typing import Any

import attrs

from greenroom_priors.journal import ToolTally
from greenroom_priors.spool import SpooledRun


@attrs.define(eq=False)
class RunLedger:
    """Run scope: the run's successful calls per tool (absolute: a checkpoint writes
    them whole), and in how many of its steps each was called. ``keeper`` is the store
    they are checkpointed into (None: the run keeps no journal); ``run`` its id there,
    unique in a fleet; ``spooled``: a file in the spool holds an earlier tally of it."""

    keeper: Any = None
    agent: str = ""
    run: str = ""
    calls: dict[str, int] = attrs.field(factory=dict)
    stored: dict[str, int] = attrs.field(factory=dict)  # the calls of the last checkpoint that reached the store
    steps: dict[str, int] = attrs.field(factory=dict)
    last_step: dict[str, int] = attrs.field(factory=dict)
    run_steps: int = 0
    closed: bool = False
    spooled: bool = False

    def __deepcopy__(self, memo: dict[int, Any]) -> RunLedger:
        # a run's snapshot copies its run state: the counts, not the store
        return attrs.evolve(self, keeper=None, calls=dict(self.calls), steps=dict(self.steps), last_step={})

    def tally(self, tool: str, step: int, run_steps: int) -> None:
        self.calls[tool] = self.calls.get(tool, 0) + 1
        if self.last_step.get(tool) != step:
            self.last_step[tool] = step
            self.steps[tool] = self.steps.get(tool, 0) + 1
        self.run_steps = max(self.run_steps, run_steps)

    def spooled_run(self) -> SpooledRun:
        """The run so far, as a checkpoint writes it (into the journal, or the spool)."""
        tools = {name: ToolTally(n, self.steps[name]) for name, n in self.calls.items()}
        return SpooledRun(self.agent, self.run, self.run_steps, tools, journal=True, stored=self.stored)


__all__ = ["RunLedger"]
