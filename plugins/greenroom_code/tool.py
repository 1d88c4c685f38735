"""``run_code``: the model's script runs in the sandbox, and each tool it calls is a call of
the run (``RunContext.call_tool``: the same policy, gates, hooks, priors, limits and events
as the model's own calls). Only what the script returns, and its console output, bounded,
come back: the tools' results stay in the sandbox."""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any

import attrs

from greenroom import RunContext, ToolCallContext, ToolDescriptor, ToolResult
from greenroom_code.config import CodeConfig
from greenroom_code.sandbox import DenoMissing, Outcome, find_deno, run_script

RUN_CODE = "run_code"

DESCRIPTOR = ToolDescriptor(
    name=RUN_CODE,
    description=(
        "Run JavaScript in a sandbox (no network, files or environment). `code` is the body of an async "
        "function: `await tools.NAME(args)` calls any tool you may use by its name, deferred ones too, and "
        "gives its structured result (else its text); a failed call throws an Error. Only what you `return` "
        "(JSON) comes back, with what you console.log. Use it to chain calls, loop over them and keep large "
        "results out of the conversation."
    ),
    parameters={
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "The body of an async function, e.g. `const r = await tools.x({a: 1}); return r.id;`",
            }
        },
        "required": ["code"],
        "additionalProperties": False,
    },
    deferrable="never",
)

_in_script: ContextVar[bool] = ContextVar("greenroom_code_in_script", default=False)
"""True in the tasks that answer a script's calls: a script cannot start another script."""


class RunCode:
    """The ``run_code`` tool (one instance serves every run of its runtime)."""

    def __init__(self, config: CodeConfig) -> None:
        self.config = config

    @property
    def descriptor(self) -> ToolDescriptor:
        return DESCRIPTOR

    @property
    def timeout(self) -> float | None:
        return self.config.timeout

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext[RunContext]) -> ToolResult:
        run = ctx.run
        if run is None:
            return ToolResult.error(f"{RUN_CODE} works only in a run of the runtime that contributed it")
        if _in_script.get():
            return ToolResult.error(f"a script cannot call {RUN_CODE}: call the tools themselves")
        try:
            deno = find_deno(self.config.deno)
        except DenoMissing as exc:
            return ToolResult.error(f"{RUN_CODE} cannot run scripts here: {exc}")

        async def answer(name: str, arguments: Any) -> tuple[bool, Any]:
            result = await run.call_tool(name, arguments)
            if result.is_error:
                return False, result.content
            return True, result.structured if result.structured is not None else result.content

        # processor time past the deadline (twice it: V8 runs threads beside the script) ends
        # a sandbox whose greenroom is gone; while greenroom lives, its deadline ends it first
        deadline = self.config.timeout or run.agent.tool_timeout
        limits = attrs.evolve(self.config.limits, cpu_seconds=2 * deadline + 5)
        token = _in_script.set(True)
        try:
            outcome = await run_script(
                str(args.get("code", "")), answer, limits, deno=deno, concurrency=run.agent.max_concurrency
            )
        finally:
            _in_script.reset(token)
        return rendered(outcome)


def rendered(outcome: Outcome) -> ToolResult:
    """What the model reads: the return value (a string as it is, anything else as JSON),
    then the console output; or why the script failed, and after how many calls."""
    console = f"\n\nconsole:\n{outcome.console.rstrip()}" if outcome.console.strip() else ""
    if not outcome.ok:
        calls = f" (after {outcome.calls} tool call{'s' if outcome.calls != 1 else ''})" if outcome.calls else ""
        return ToolResult.error(f"the script failed{calls}: {outcome.error}{console}")
    value = outcome.value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    structured: dict[str, Any] = {"result": value}
    if console:
        structured["console"] = outcome.console
    return ToolResult(text + console, structured=structured)
