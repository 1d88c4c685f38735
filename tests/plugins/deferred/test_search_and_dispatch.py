"""ToolSearch, the dispatcher, scoping and byte-stability of the dispatch strategy."""

from __future__ import annotations

import json
from typing import Any

import pytest

from greenroom import Decision, Plugin, ToolCall, hookimpl, tool
from greenroom import events as ev
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.events import SearchPerformed, ToolPromoted


def make_tools() -> list[Any]:
    tools = []
    for topic in ("weather", "calendar", "email", "billing", "github", "slack"):
        for verb in ("get", "list", "create"):

            def impl(**kw: Any) -> str:
                return json.dumps(kw, sort_keys=True)

            impl.__name__ = f"{topic}_{verb}"
            t = tool(
                impl,
                name=f"{topic}_{verb}",
                description=f"{verb.capitalize()} {topic} records for the account, with paging and filters.",
            )
            t._descriptor = type(t.descriptor)(  # a real schema: one required string, one optional int
                t.descriptor.name,
                t.descriptor.description,
                {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": f"The {topic} id."},
                        "limit": {"type": "integer", "minimum": 1, "description": "Page size."},
                    },
                    "required": ["id"],
                    "additionalProperties": False,
                },
            )
            tools.append(t)
    return tools


def runtime(make_runtime, turns, *, plugins=(), **cfg):
    events: list[ev.Event] = []
    cfg.setdefault("enabled", True)  # 18 small tools stay below the automatic thresholds
    rt = make_runtime(turns, tools=make_tools(), plugins=[*plugins, DeferredToolsPlugin(DeferredConfig(**cfg))])
    rt.events.subscribe(events.append)
    return rt, events


def results(session) -> list[str]:
    return [m.content for m in session.messages if m.role == "tool"]


def search(query: str, **kw: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": query, **kw}}]}


def dispatch(name: str, args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "deferred_tool_call", "arguments": {"tool_name": name, "arguments": args}}]}


@pytest.mark.anyio
async def test_keyword_search_returns_full_schemas_in_functions_block(make_runtime) -> None:
    rt, events = runtime(make_runtime, [search("weather get"), {"text": "ok"}])
    s = rt.session()
    await s.run("x")
    (out,) = results(s)
    lines = out.splitlines()
    assert lines[0] == "<functions>"
    first = json.loads(lines[1].removeprefix("<function>").removesuffix("</function>"))
    assert first["name"] == "weather_get"  # name hits score 3 each
    assert first["parameters"]["required"] == ["id"]
    assert set(first) == {"description", "name", "parameters"}
    assert "deferred_tool_call(tool_name, arguments)" in lines[-1]
    (searched,) = [e for e in events if isinstance(e, SearchPerformed)]
    assert searched.results[0][0] == "weather_get"


@pytest.mark.anyio
async def test_select_resolves_exact_names_in_order_and_reports_misses(make_runtime) -> None:
    rt, _events = runtime(make_runtime, [search("select:slack_list,nope,email_get"), {"text": "ok"}])
    s = rt.session()
    await s.run("x")
    (out,) = results(s)
    names = [json.loads(line[10:-11])["name"] for line in out.splitlines() if line.startswith("<function>")]
    assert names == ["slack_list", "email_get"]
    assert "Not found: nope." in out


@pytest.mark.anyio
async def test_required_terms_and_deterministic_ties(make_runtime) -> None:
    rt, _ = runtime(make_runtime, [search("+billing list create", max_results=10), {"text": "ok"}])
    s = rt.session()
    await s.run("x")
    (out,) = results(s)
    names = [json.loads(line[10:-11])["name"] for line in out.splitlines() if line.startswith("<function>")]
    assert names and all(n.startswith("billing_") for n in names)
    # equal scores sorted by name; billing_get (3) stays in the band of half the top score (6)
    assert names == ["billing_create", "billing_list", "billing_get"]


@pytest.mark.anyio
async def test_no_match_says_so_and_lists_names(make_runtime) -> None:
    rt, _ = runtime(make_runtime, [search("kubernetes"), {"text": "ok"}])
    s = rt.session()
    await s.run("x")
    (out,) = results(s)
    assert out.startswith("No tools matched 'kubernetes'.") and "weather_get" in out


@pytest.mark.anyio
async def test_empty_query_browses(make_runtime) -> None:
    rt, _ = runtime(make_runtime, [search(""), {"text": "ok"}])
    s = rt.session()
    await s.run("x")
    (out,) = results(s)
    assert out.startswith("18 deferred tools.") and "github_create - Create github records" in out


class BlockBilling(Plugin):
    name = "no-billing"

    @hookimpl
    def greenroom_hidden_tools(self, ctx: Any, tools: Any) -> list[str]:
        return [t.name for t in tools if t.name.startswith("billing_")]

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: Any) -> Decision | None:
        return Decision.block("billing is off limits") if call.name.startswith("billing_") else None


@pytest.mark.anyio
async def test_a_blocked_tool_is_never_found_listed_or_run(make_runtime) -> None:
    turns = [search("billing"), search("select:billing_get"), dispatch("billing_get", {"id": "1"}), {"text": "ok"}]
    rt, _ = runtime(make_runtime, turns, plugins=[BlockBilling()])
    s = rt.session()
    await s.run("x")
    found, selected, called = results(s)
    assert "<function>" not in found and "billing_" not in found
    assert "No tools matched" in selected and "billing_" not in selected.split("Available deferred tools:")[1]
    assert "no tool named 'billing_get'" in called
    assert "billing_" not in rt.model.requests[0].system_text


@pytest.mark.anyio
async def test_dispatch_runs_the_real_tool_and_hooks_see_the_real_call(make_runtime) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    class Spy(Plugin):
        name = "spy"

        @hookimpl
        def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: Any) -> None:
            seen.append((call.name, dict(call.arguments or {})))

    turns = [search("calendar create"), dispatch("calendar_create", {"id": "c1", "limit": 2}), {"text": "ok"}]
    rt, _ = runtime(make_runtime, turns, plugins=[Spy()])
    s = rt.session()
    await s.run("x")
    assert seen[-1] == ("calendar_create", {"id": "c1", "limit": 2})
    assert results(s)[-1] == '{"id":"c1","limit":2}'  # compacted, values intact
    from greenroom import ToolUsage

    assert s.last_snapshot[ToolUsage].calls[2] == ["calendar_create"]  # usage counts the real tool


@pytest.mark.anyio
async def test_invalid_arguments_through_the_dispatcher_get_the_schema_back(make_runtime) -> None:
    turns = [dispatch("email_get", {"limit": 0}), dispatch("email_get", '{"id": "e1"}'), {"text": "ok"}]
    rt, _ = runtime(make_runtime, turns)
    s = rt.session()
    await s.run("x")
    invalid, fixed = results(s)
    assert "invalid arguments for 'email_get'" in invalid
    assert "- limit: 0 is less than the minimum of 1" in invalid
    assert "'id' is a required property" in invalid
    assert '"required": ["id"]' in invalid  # the full schema comes back
    assert fixed == '{"id":"e1"}'  # arguments sent as a JSON string are accepted


@pytest.mark.anyio
async def test_calling_a_deferred_tool_without_search_works_and_counts_as_discovered(make_runtime) -> None:
    turns = [{"tool_calls": [{"name": "github_list", "arguments": {"id": "r"}}]}, {"text": "ok"}]
    rt, events = runtime(make_runtime, turns)
    s = rt.session()
    await s.run("x")
    assert results(s) == ['{"id":"r"}']
    assert s.state[DeferralState].discovered == ["github_list"]
    assert any(isinstance(e, ToolPromoted) and e.reason == "called without search" for e in events)


@pytest.mark.anyio
async def test_dispatch_prefix_is_byte_identical_over_a_session(make_runtime, tmp_path) -> None:
    turns = [
        search("weather"),
        dispatch("weather_get", {"id": "w"}),
        search("select:email_create,slack_get"),
        dispatch("email_create", {"id": "e"}),
        {"tool_calls": [{"name": "slack_get", "arguments": {"id": "s"}}]},
        {"text": "done"},
        search("github"),
        {"text": "done again"},
    ]
    rt, events = runtime(make_runtime, turns)
    s = rt.session()
    await s.run("first")
    path = s.save(tmp_path / "s.json")
    resumed = rt.load_session(path)
    await resumed.run("second")
    requests = [e for e in events if isinstance(e, ev.RequestSent)]
    assert len(requests) == 8
    assert len({r.prefix_hash for r in requests}) == 1
    first, *rest = rt.model.requests
    for req in rest:
        assert req.tools == first.tools and req.system == first.system
    assert [t.name for t in first.tools] == ["ToolSearch", "deferred_tool_call"]
