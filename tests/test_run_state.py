"""Run state lives only in the run (DESIGN §13): one runtime serves many runs at once (every
client of ``greenroom serve``), and one instance of each plugin serves them all, so no
first-party plugin keeps anything of a run on itself. Checked from outside: the objects a
plugin instance reaches, after runs that searched, called tools and were left open, hold
no run's context and no run's id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from weakref import WeakKeyDictionary

import pytest

from greenroom import AgentConfig, Plugin, RunContext, RunKind, Runtime, make_plugin_host, tool
from greenroom.providers.scripted import ScriptedModel

pytestmark = pytest.mark.anyio


@tool(group="weather")
def forecast(city: str) -> str:
    """Forecast for a city."""
    return f"{city}: sunny"


@tool(group="mail")
def send_mail(to: str, body: str) -> str:
    """Send an e-mail."""
    return "sent"


@tool(group="mail")
def read_mailbox() -> str:
    """Every e-mail in the box (more than a result may hold: it is cut, and kept)."""
    return "\n".join(f"mail {k}: lunch at noon?" for k in range(3_000))


def first_party_plugins(tmp_path: Any) -> list[Plugin]:
    from greenroom_deferred import DeferredToolsPlugin
    from greenroom_priors import PriorsConfig, PriorsPlugin
    from greenroom_ranking import SearchRankingPlugin
    from greenroom_results import ReadResultPlugin

    plugins: list[Plugin] = [
        DeferredToolsPlugin(),
        SearchRankingPlugin(),
        PriorsPlugin(PriorsConfig(store=f"sqlite:///{tmp_path / 'priors.sqlite3'}")),
        ReadResultPlugin(),
    ]
    try:
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:  # the otel extra: checked where it is installed (CI installs it)
        return plugins
    from greenroom_otel import OtelPlugin

    plugins.append(OtelPlugin(span_exporter=InMemorySpanExporter()))
    return plugins


def reachable(root: object, depth: int = 5) -> Iterator[object]:
    """Every object ``root`` holds, through attributes and containers, ``depth`` levels down
    (modules, classes and functions are not followed: they are not the instance's)."""
    seen: set[int] = set()
    frontier: list[object] = [root]
    for _ in range(depth):
        found: list[object] = []
        for obj in frontier:
            if id(obj) in seen or isinstance(obj, (type, type(reachable))) or (callable(obj) and not vars_of(obj)):
                continue
            seen.add(id(obj))
            yield obj
            if isinstance(obj, (dict, WeakKeyDictionary)):
                found.extend(k for k in list(obj.keys()))
                found.extend(list(obj.values()))
            elif isinstance(obj, (list, tuple, set, frozenset)):
                found.extend(list(obj)[:10_000])
            found.extend(vars_of(obj).values())
        frontier = found


def vars_of(obj: object) -> dict[str, Any]:
    try:
        return dict(vars(obj))
    except TypeError:
        slots = getattr(type(obj), "__slots__", ())
        return {s: getattr(obj, s) for s in slots if isinstance(s, str) and hasattr(obj, s)}


async def test_no_plugin_keeps_anything_of_a_run_on_itself(tmp_path: Any) -> None:
    plugins = first_party_plugins(tmp_path)
    rt = Runtime(
        model=ScriptedModel([]),
        tools=[forecast, send_mail, read_mailbox],
        host=make_plugin_host(records=[], extra=plugins),
        agent=AgentConfig(max_result_tokens=2_000),
    )
    runs = []
    for _ in range(4):
        run = rt.start_run(kind=RunKind.CLIENT)
        await run.start()
        await run.next_request()
        await run.call_tool(run.take_client_call("ToolSearch", {"query": "forecast weather"}))
        await run.call_tool(run.take_client_call("forecast", {"city": "Oslo"}))
        cut = await run.call_tool(run.take_client_call("read_mailbox", {}))
        assert "greenroom kept the whole result" in cut.content
        runs.append(run)
    for run in runs[:2]:  # some ended, the others left open (a client that went away)
        await run.end(run.outcome_of("final"))
    run_ids = {run.ctx.run_id for run in runs}
    for plugin in plugins:
        held = [
            obj for obj in reachable(plugin) if isinstance(obj, RunContext) or (isinstance(obj, str) and obj in run_ids)
        ]
        assert not held, f"plugin {plugin.name!r} keeps run state on itself: {held[:3]}"
    await rt.aclose()


def test_the_walk_finds_a_run_kept_on_an_instance() -> None:
    class Keeper:
        def __init__(self) -> None:
            self.by_run: dict[str, list[int]] = {"run-1": [1]}

    assert "run-1" in list(reachable(Keeper()))
