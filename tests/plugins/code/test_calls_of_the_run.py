"""Every call a script makes is an ordinary call of the run: the policy hides what it hides,
gates decide, AfterToolExecute and the OTel plugin see each call, usage counts it; a failed
call is an Error the script can catch. And without Deno, the model and the config check say
what to install."""

from __future__ import annotations

import json
from typing import Any

import pytest

from greenroom import Decision, Plugin, RunContext, ToolCall, ToolDescriptor, hookimpl, tool
from greenroom.config import AgentConfig
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.policy import ToolPolicy
from greenroom.run.runtime import Runtime
from greenroom_code import CodeConfig, CodeModePlugin

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@tool
def lookup(city: str) -> dict[str, Any]:
    """Look a city up."""
    return {"city": city, "sky": "sunny", "stations": list(range(50))}


@tool
def wipe(target: str) -> str:
    """Delete everything (a gate refuses it)."""
    return f"wiped {target}"


@tool
def payroll(month: str) -> str:
    """Hidden from this agent by its policy."""
    return "secret figures"


class Guard(Plugin):
    """Blocks ``wipe`` and watches what AfterToolExecute sees."""

    name = "guard"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        self.used: dict[str, int] = {}

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: RunContext, call: ToolCall, tool: ToolDescriptor) -> Decision | None:
        return Decision.block("wiping is not allowed") if call.name == "wipe" else None

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall) -> None:
        self.seen.append(call.name)

    @hookimpl
    def greenroom_run_end(self, ctx: RunContext) -> None:
        self.used = ctx.usage.counts()


SCRIPT = """
const out = {};
const oslo = await tools.lookup({city: "Oslo"});
out.sky = oslo.sky;
out.stations = oslo.stations.length;
for (const name of ["wipe", "payroll"]) {
  try { await tools[name](name === "wipe" ? {target: "/"} : {month: "May"}); out[name] = "ran"; }
  catch (e) { out[name] = e.message; }
}
return out;
"""


def runtime(turns: list[Any], *plugins: Plugin, config: CodeConfig | None = None) -> Runtime:
    return Runtime(
        model=ScriptedModel(turns),
        tools=[lookup, wipe, payroll],
        host=make_plugin_host(records=[], extra=[CodeModePlugin(config or CodeConfig()), *plugins]),
        agent=AgentConfig(max_steps=4),
        policy=ToolPolicy(deny=("payroll",)),
    )


async def test_a_scripts_calls_go_through_policy_gates_hooks_usage_and_spans() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from greenroom_otel import OtelConfig, OtelPlugin

    spans = InMemorySpanExporter()
    otel = OtelPlugin(OtelConfig(), span_exporter=spans, metric_reader=InMemoryMetricReader())
    guard = Guard()
    turns = [{"tool_calls": [{"name": "run_code", "arguments": {"code": SCRIPT}}]}, {"text": "done"}]
    rt = runtime(turns, guard, otel)
    try:
        session = rt.session()
        await session.run("weather?")
    finally:
        await rt.aclose()
        otel.flush()
    result = next(m for m in session.messages if m.role == "tool")
    value = json.loads(result.content)
    assert value["sky"] == "sunny" and value["stations"] == 50
    assert value["wipe"] == "call to 'wipe' was blocked: wiping is not allowed"
    assert "there is no tool named 'payroll'" in value["payroll"]  # hidden: as absent in a script
    assert guard.seen == ["lookup", "wipe", "run_code"]  # AfterToolExecute: every call the gates saw
    assert guard.used == {"lookup": 1, "wipe": 1, "run_code": 1}  # usage (what priors learn from)
    names = [s.name for s in spans.get_finished_spans() if s.name.startswith("execute_tool ")]
    assert sorted(names) == [
        "execute_tool lookup",
        "execute_tool payroll",
        "execute_tool run_code",
        "execute_tool wipe",
    ]
    otel.shutdown()


async def test_without_deno_the_model_reads_what_to_install() -> None:
    turns = [{"tool_calls": [{"name": "run_code", "arguments": {"code": "return 1"}}]}, {"text": "done"}]
    rt = runtime(turns, config=CodeConfig(deno="/nonexistent/deno"))
    try:
        session = rt.session()
        outcome = await session.run("go")
    finally:
        await rt.aclose()
    result = next(m for m in session.messages if m.role == "tool")
    assert result.is_error
    assert result.content == "run_code cannot run scripts here: deno = '/nonexistent/deno': no such executable"
    assert outcome.stop_reason == "final"


def test_config_check_names_a_missing_deno(tmp_path) -> None:
    from typer.testing import CliRunner

    from greenroom.cli.app import app

    config = tmp_path / "agent.toml"
    config.write_text(
        '[agent]\nmodel = "scripted"\n[plugins]\nenable = ["code-mode"]\n'
        '[plugins.code-mode]\ndeno = "/nonexistent/deno"\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["config", "check", str(config)])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "plugins.code-mode.deno: deno = '/nonexistent/deno': no such executable" in said
