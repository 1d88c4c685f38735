"""One test per hook (each named ``test_hook_<hook name>``), and the meta-test that keeps
it so: every hookspec is documented and has its own test."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from greenroom import (
    Decision,
    Plugin,
    Ranking,
    Scope,
    ScoredTool,
    SearchQuery,
    ToolCall,
    ToolResult,
    hookimpl,
    hookspecs,
    tool,
)
from greenroom.compose.build import build_model
from greenroom.models import Message, ModelResponse
from greenroom.plugins.discovery import make_plugin_host


@tool
def echo(text: str) -> str:
    """Echo text."""
    return text


def test_every_hook_is_documented_and_has_its_own_test() -> None:
    assert hookspecs.HOOK_NAMES, "no hooks found"
    sources = "\n".join(p.read_text() for p in Path(__file__).parents[2].rglob("test_*.py"))
    for name in hookspecs.HOOK_NAMES:
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert len(doc) > 40, f"{name} needs a docstring saying when it fires and what it may change"
        assert f"def test_hook_{name}(" in sources, f"{name} has no test named test_hook_{name}"


def test_hook_greenroom_register_state(make_runtime) -> None:
    import attrs

    @attrs.define
    class Notes:
        items: list[str] = attrs.field(factory=list)

    class P(Plugin):
        name = "p"

        @hookimpl
        def greenroom_register_state(self, registry: Any) -> None:
            registry.register(Notes, Scope.SESSION, owner="p")

    rt = make_runtime(plugins=[P()])
    assert rt.registry.key(Notes).scope is Scope.SESSION
    assert rt.session().state[Notes].items == []


@pytest.mark.anyio
async def test_hook_greenroom_tools(make_runtime) -> None:
    class P(Plugin):
        name = "p"

        @hookimpl
        def greenroom_tools(self, tools: Any) -> list[Any]:
            assert "echo" in tools  # sees the user's tools
            return [tool(lambda: "pong", name="plugin_ping", description="Ping.")]

    rt = make_runtime([{"tool_calls": [{"name": "plugin_ping"}]}, {"text": "ok"}], tools=[echo], plugins=[P()])
    s = rt.session()
    await s.run("x")
    assert s.messages[2].content == "pong"


@pytest.mark.anyio
async def test_hook_greenroom_model_providers() -> None:
    class Fixed:
        def __init__(self, spec: str) -> None:
            self.spec = spec

        async def complete(self, request: Any) -> ModelResponse:
            return ModelResponse(Message("assistant", f"fixed:{self.spec}"))

    class P(Plugin):
        name = "p"

        @hookimpl
        def greenroom_model_providers(self) -> dict[str, Any]:
            return {"fixed": lambda spec, options: Fixed(spec)}

    host = make_plugin_host(records=[], extra=[P()])
    model = build_model("fixed:abc", {}, host)
    assert (await model.complete(None)).message.content == "fixed:abc"


def test_hook_greenroom_cli_commands() -> None:
    from greenroom.cli import add_plugin_commands

    class P(Plugin):
        name = "p"

        @hookimpl
        def greenroom_cli_commands(self, app: typer.Typer) -> None:
            @app.command("hello")
            def hello() -> None:
                typer.echo("hello from a plugin")

    class Bad(Plugin):
        name = "bad"

        @hookimpl
        def greenroom_cli_commands(self, app: typer.Typer) -> None:
            raise RuntimeError("no commands today")

    app = typer.Typer()

    @app.command("base")
    def base() -> None:
        typer.echo("base")

    from greenroom.plugins.discovery import PluginRecord

    records = [PluginRecord("p", "d", "1", "p = x:P", cls=P), PluginRecord("bad", "d", "1", "bad = x:Bad", cls=Bad)]
    add_plugin_commands(app, records)
    result = CliRunner().invoke(app, ["hello"])
    assert result.exit_code == 0 and "hello from a plugin" in result.output


class Phases(Plugin):
    name = "phases"

    def __init__(self) -> None:
        super().__init__()
        self.log: list[Any] = []


@pytest.mark.anyio
async def test_hook_greenroom_run_start(make_runtime) -> None:
    class P(Phases):
        @hookimpl
        def greenroom_run_start(self, ctx: Any) -> None:
            self.log.append((ctx.input, ctx.step))

    p = P()
    await make_runtime([{"text": "a"}], plugins=[p]).session().run("hello")
    assert p.log == [("hello", 0)]


@pytest.mark.anyio
async def test_hook_greenroom_hidden_tools(make_runtime) -> None:
    class P(Phases):
        @hookimpl
        async def greenroom_hidden_tools(self, ctx: Any, tools: Any) -> list[str]:
            return [t.name for t in tools if t.name == "echo"]

    rt = make_runtime([{"text": "a"}], tools=[echo], plugins=[P()])
    await rt.session().run("x")
    assert rt.model.requests[0].tools == ()


@pytest.mark.anyio
async def test_hook_greenroom_before_inference(make_runtime) -> None:
    from greenroom import SystemSection

    class P(Phases):
        @hookimpl
        def greenroom_before_inference(self, ctx: Any, request: Any) -> None:
            request.tools.clear()
            request.set_section(SystemSection("note", f"step {ctx.step}", stable=False))

    rt = make_runtime([{"text": "a"}], tools=[echo], plugins=[P()])
    await rt.session().run("x")
    req = rt.model.requests[0]
    assert req.tools == () and req.system[-1].text == "step 1"


@pytest.mark.anyio
async def test_hook_greenroom_after_inference(make_runtime) -> None:
    class P(Phases):
        @hookimpl
        def greenroom_after_inference(self, ctx: Any, response: Any) -> None:
            self.log.append([c.name for c in response.tool_calls])

    p = P()
    rt = make_runtime(
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "t"}}]}, {"text": "a"}], tools=[echo], plugins=[p]
    )
    await rt.session().run("x")
    assert p.log == [["echo"], []]


@pytest.mark.anyio
async def test_hook_greenroom_resolve_tool_call(make_runtime) -> None:
    class Dispatcher(Phases):
        name = "dispatcher"

        @hookimpl
        def greenroom_resolve_tool_call(self, ctx: Any, call: ToolCall) -> ToolCall | None:
            if call.name == "via":
                return ToolCall("ignored", call.arguments["tool_name"], call.arguments["arguments"])
            return None

    class Seer(Phases):
        @hookimpl
        def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: Any) -> None:
            self.log.append((call.id, call.name, dict(call.arguments)))

    seer = Seer()
    rt = make_runtime(
        [
            {"tool_calls": [{"name": "via", "arguments": {"tool_name": "echo", "arguments": {"text": "hi"}}}]},
            {"text": "a"},
        ],
        tools=[echo],
        plugins=[Dispatcher(), seer],
    )
    s = rt.session()
    await s.run("x")
    assert seer.log == [("call_1_0", "echo", {"text": "hi"})]  # the real call, original id
    assert s.messages[2].content == "hi" and s.messages[2].name == "echo"


@pytest.mark.anyio
async def test_hook_greenroom_before_tool_execute(make_runtime) -> None:
    class P(Phases):
        @hookimpl
        async def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: Any) -> Decision | None:
            return Decision.block("not today") if call.arguments.get("text") == "no" else None

    rt = make_runtime(
        [
            {
                "tool_calls": [
                    {"name": "echo", "arguments": {"text": "no"}},
                    {"name": "echo", "arguments": {"text": "yes"}},
                ]
            },
            {"text": "a"},
        ],
        tools=[echo],
        plugins=[P()],
    )
    s = rt.session()
    await s.run("x")
    assert s.messages[2].is_error and "not today" in s.messages[2].content
    assert s.messages[3].content == "yes"


@pytest.mark.anyio
async def test_hook_greenroom_after_tool_execute(make_runtime) -> None:
    class P(Phases):
        @hookimpl
        def greenroom_after_tool_execute(self, ctx: Any, call: ToolCall, result: ToolResult) -> None:
            self.log.append((call.name, result.content, ctx.usage.called_in(ctx.step)))

    p = P()
    rt = make_runtime(
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "z"}}]}, {"text": "a"}], tools=[echo], plugins=[p]
    )
    await rt.session().run("x")
    assert p.log == [("echo", "z", {"echo"})]


@pytest.mark.anyio
async def test_hook_greenroom_run_end(make_runtime) -> None:
    class P(Phases):
        @hookimpl
        def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
            self.log.append((outcome.stop_reason, outcome.text, outcome.steps))

    p = P()
    await make_runtime([{"text": "bye"}], plugins=[p]).session().run("x")
    assert p.log == [("final", "bye", 1)]


CANDIDATES = [
    echo.descriptor,
    tool(lambda: 1, name="weather_now", description="Current weather for a city.").descriptor,
    tool(lambda: 1, name="weather_week", description="Forecast for the week.").descriptor,
]


@pytest.mark.anyio
async def test_hook_greenroom_rank_tools(make_runtime) -> None:
    class Reverse(Plugin):
        name = "reverse"

        @hookimpl
        def greenroom_rank_tools(self, ctx: Any, query: SearchQuery, candidates: Any) -> Ranking:
            return Ranking("reverse", tuple(ScoredTool(c.name, float(i)) for i, c in enumerate(candidates)))

    rt = make_runtime(plugins=[Reverse()])
    found, rankings = await rt.search(SearchQuery.parse("weather"), CANDIDATES)
    assert [r.ranker for r in rankings] == ["reverse"]
    # with a single ranker and no fuser, its order is the answer
    assert [s.name for s in found] == ["echo", "weather_now", "weather_week"]


@pytest.mark.anyio
async def test_hook_greenroom_search_tools(make_runtime) -> None:
    class LastWins(Plugin):
        name = "fuser"

        @hookimpl
        def greenroom_search_tools(self, ctx: Any, query: Any, candidates: Any, rankings: Any) -> list[ScoredTool]:
            return [ScoredTool("weather_week", 1.0)]

    rt = make_runtime()
    found, _ = await rt.search(SearchQuery.parse("weather"), CANDIDATES)
    assert [s.name for s in found] == ["weather_now", "weather_week"]  # core's keyword fallback
    rt = make_runtime(plugins=[LastWins()])
    found, _ = await rt.search(SearchQuery.parse("weather"), CANDIDATES)
    assert [s.name for s in found] == ["weather_week"]


@pytest.mark.anyio
async def test_async_and_sync_implementations_run_one_after_another_in_pluggy_order() -> None:
    """An async hook finishes before the next implementation starts (priors load before
    the deferred plugin reads them, whichever of them is async)."""
    import anyio

    log: list[str] = []

    class Early(Plugin):
        name = "early"

        @hookimpl(tryfirst=True)
        async def greenroom_run_start(self, ctx: Any) -> str:
            log.append("early:start")
            await anyio.lowlevel.checkpoint()
            log.append("early:end")
            return "early"

    class Late(Plugin):
        name = "late"

        @hookimpl(trylast=True)
        def greenroom_run_start(self, ctx: Any) -> None:
            log.append("late")

    host = make_plugin_host(records=[], extra=[Late(), Early()])
    results = await host.call("greenroom_run_start", ctx=None)
    assert log == ["early:start", "early:end", "late"]
    assert results == ["early"]  # None answers are left out, as pluggy does


@pytest.mark.anyio
async def test_a_plugin_registered_later_is_called_even_if_it_is_the_first_async_one() -> None:
    class Sync(Plugin):
        name = "sync"

        @hookimpl
        def greenroom_run_start(self, ctx: Any) -> str:
            return "sync"

    class Async(Plugin):
        name = "async"

        @hookimpl(tryfirst=True)
        async def greenroom_run_start(self, ctx: Any) -> str:
            return "async"

    host = make_plugin_host(records=[], extra=[Sync()])
    assert await host.call("greenroom_run_start", ctx=None) == ["sync"]
    host.register(Async(), "async")
    assert await host.call("greenroom_run_start", ctx=None) == ["async", "sync"]
    assert await host.call_first("greenroom_run_start", ctx=None) == "async"
