"""An observer plugin: counts each run's tool calls and times the run, from its events alone."""

from __future__ import annotations

import time

import attrs

from greenroom import Event, Plugin, RunContext, Scope, StateRegistry, ToolExecuted, hookimpl


@attrs.define
class RunStats:
    """What the observer saw of one run so far (run scope: each run starts with a fresh one)."""

    started: float = 0.0
    calls: int = 0
    failed: int = 0
    rejected: int = 0


@attrs.frozen
class RunReport:
    """One finished run, as the observer reports it."""

    run_id: str
    kind: str
    stop_reason: str
    calls: int
    failed: int
    rejected: int
    seconds: float


class Observer(Plugin):
    name = "observer"

    def __init__(self, config: object = None) -> None:
        super().__init__(config)
        self.reports: list[RunReport] = []  # finished runs only; a run's counters live in the run

    @hookimpl
    def greenroom_register_state(self, registry: StateRegistry) -> None:
        registry.register(RunStats, Scope.RUN, owner=self.name)

    @hookimpl
    def greenroom_event(self, ctx: RunContext | None, event: Event) -> None:
        if ctx is None:  # an event of the runtime itself, outside any run
            return
        stats = ctx.state[RunStats]
        if event.kind == "run_start":
            stats.started = time.perf_counter()
        elif isinstance(event, ToolExecuted):  # every call's result, a rejected call's included
            stats.calls += 1
            stats.failed += event.is_error
        elif event.kind == "tool_rejected":  # refused before any gate saw it
            stats.rejected += 1
        elif event.kind == "run_end":
            report = RunReport(
                run_id=ctx.run_id,
                kind=ctx.kind.value,
                stop_reason=event.to_json()["stop_reason"],
                calls=stats.calls,
                failed=stats.failed,
                rejected=stats.rejected,
                seconds=time.perf_counter() - stats.started,
            )
            self.reports.append(report)  # or hand it to an exporter's queue: this hook must not wait
