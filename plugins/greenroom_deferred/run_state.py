"""What the deferred-tools plugin keeps for one run, in the run (``Scope.RUN``).

One runtime serves many runs at once (every client of ``greenroom serve``, every task
that runs a session), and one plugin instance serves them all. So nothing that belongs
to a run sits on the plugin: the strategy in effect for the run (with the memos of what
it sent) and whether the run's placements match its scope live in ``DeferralRun``,
which the runtime makes fresh for each run. The plugin's hooks and its own tools find
it through the run they are called for (``ctx.state``, ``ToolCallContext.run``).
"""

from __future__ import annotations

from typing import Any

import attrs

from greenroom import RunContext
from greenroom_deferred.config import DeferredConfig
from greenroom_deferred.strategies import Strategy, for_run


@attrs.define(eq=False)
class DeferralRun:
    """Run scope: ``strategy`` is the strategy in effect for this run (chosen at
    RunStart; it keeps what it sent, per run); ``settled`` says whether this run's
    placements were made or matched to its scope (on its first step)."""

    strategy: Strategy | None = None
    settled: bool = False
    placed_for: object = None
    """The catalog whose declared tools were all placed (``DeferredToolsPlugin._newcomers``)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> DeferralRun:
        # a run's snapshot copies its run state: the strategy's memos hold the catalog and
        # the session's state, which a snapshot has no use for copying (the strategy is
        # shared with the copy, not duplicated)
        return DeferralRun(self.strategy, self.settled)


def run_strategy(ctx: RunContext, config: DeferredConfig) -> Strategy:
    """The strategy of the run ``ctx`` is for: the one chosen at its RunStart, or (a run
    whose RunStart this plugin did not see) the one the config and model give."""
    run = ctx.state[DeferralRun]
    if run.strategy is None:
        run.strategy = for_run(config, hosted_search=ctx.hosted_tool_search)
    return run.strategy
