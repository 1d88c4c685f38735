"""The ``native`` strategy with scripted models: on a model with hosted tool search the
plugin sends every visible tool, names the deferred ones in ``request.deferred`` and adds
nothing of its own; unloaded group tools are sent deferred and load on first call; on a
model without hosted search it works as ``dispatch`` and warns once per session."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from greenroom import ToolDescriptor, ToolPriors, hookimpl, tool
from greenroom import events as ev
from greenroom.config import AgentConfig
from greenroom.models import HostedSearch, Message, ModelRequest, ModelResponse, supports_native_tool_search
from greenroom.plugins.discovery import Plugin, make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime
from greenroom.tools.groups import ToolGroup
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.events import SearchPerformed, ToolPromoted
from greenroom_deferred.listing import SECTION_KEY

pytestmark = pytest.mark.anyio

PARAMS = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": False}


def catalog_tool(name: str) -> Any:
    def impl(id: str) -> str:
        return f"{name}:{id}"

    t = tool(impl, name=name, description=f"{name.replace('_', ' ').capitalize()} records, with paging and filters.")
    t._descriptor = ToolDescriptor(name, t.descriptor.description, PARAMS)
    return t


TOOLS = [catalog_tool(f"{topic}_{verb}") for topic in ("weather", "email", "billing") for verb in ("get", "list")]


class NativeModel(ScriptedModel):
    """A scripted model that says it has hosted tool search, and reports one search
    with the turn that calls the tool it found."""

    native_tool_search = True

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await super().complete(request)
        found = tuple(c.name for c in response.tool_calls)
        if not found:
            return response
        return ModelResponse(response.message, response.usage, response.stop_reason, (HostedSearch("q", found),))


class Scoping(Plugin):
    name = "scoping"

    @hookimpl
    def greenroom_hidden_tools(self, ctx: Any, tools: Any) -> list[str]:
        return [t.name for t in tools if t.name.startswith("billing_")]

    @hookimpl(tryfirst=True)
    def greenroom_run_start(self, ctx: Any) -> None:
        ctx.profile_state.set(
            ToolPriors(p={"weather_list": 0.7}, sessions=2, loaded=True, sets={frozenset({"weather_list"}): 0.7})
        )


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args}]}


def runtime(model: ScriptedModel, *, groups: tuple[ToolGroup, ...] = (), **cfg: Any) -> tuple[Runtime, list[ev.Event]]:
    plugin = DeferredToolsPlugin(DeferredConfig(strategy="native", enabled=True, **cfg))
    rt = Runtime(
        model=model,
        tools=TOOLS,
        groups=list(groups),
        host=make_plugin_host(records=[], extra=[Scoping(), plugin]),
        agent=AgentConfig(max_steps=6),
    )
    events: list[ev.Event] = []
    rt.events.subscribe(events.append)
    return rt, events


def test_only_models_that_say_so_support_native_search() -> None:
    assert supports_native_tool_search(NativeModel([])) is True
    assert supports_native_tool_search(ScriptedModel([])) is False
    assert supports_native_tool_search(object()) is False


async def test_native_sends_every_visible_tool_and_marks_the_deferred_ones() -> None:
    model = NativeModel([call("weather_get", id="oslo"), {"text": "done"}])
    rt, events = runtime(model, never_defer=("email_get",))
    session = rt.session()
    outcome = await session.run("weather?")
    assert outcome.text == "done"
    first, second = model.requests
    names = [t.name for t in first.tools]
    assert names == ["weather_get", "weather_list", "email_get", "email_list"]  # billing hidden, nothing added
    # never_defer and a learned eager tool stay eager; the rest are the provider's to find
    assert first.deferred == {"weather_get", "email_list"}
    assert all(s.key != SECTION_KEY for s in first.system)
    assert (first.tools, first.system, first.deferred) == (second.tools, second.system, second.deferred)
    st = session.state[DeferralState]
    assert st.strategy == "native" and st.native_order == names
    assert st.discovered == ["weather_get"]
    assert [m.content for m in session.messages if m.role == "tool"] == ["weather_get:oslo"]
    (searched,) = [e for e in events if isinstance(e, SearchPerformed)]
    assert (searched.mode, searched.results) == ("hosted", (("weather_get", 1.0),))
    (promoted,) = [e for e in events if isinstance(e, ToolPromoted)]
    assert promoted.reason == "hosted search 'q'"
    assert not [e for e in events if isinstance(e, ev.PluginWarning)]
    # the trace counts only the tools rendered into the prompt, and hashes the deferred set
    sent = [e for e in events if isinstance(e, ev.RequestSent)]
    assert [e.deferred_tools for e in sent] == [("weather_get", "email_list")] * 2
    assert sent[0].prefix_hash == sent[1].prefix_hash
    eager = [t for t in first.tools if t.name not in first.deferred]
    assert sent[0].tools_tokens == rt.parts.describe_request(attrs.evolve(first, tools=tuple(eager))).tools_tokens


async def test_unloaded_group_tools_are_sent_deferred_and_load_when_called() -> None:
    loads: list[int] = []

    async def loader() -> list[Any]:
        loads.append(1)
        return [catalog_tool("crm_find"), catalog_tool("crm_update")]

    known = [ToolDescriptor(n, f"{n} records.", PARAMS) for n in ("crm_find", "crm_update")]
    group = ToolGroup("crm", "CRM", "Customer records.", loader, known=known)
    model = NativeModel([call("crm_find", id="7"), {"text": "found"}])
    rt, _ = runtime(model, groups=(group,))
    session = rt.session()
    await session.run("find customer 7")
    first, second = model.requests
    assert {"crm_find", "crm_update"} <= first.deferred
    assert "load_tools" not in [t.name for t in first.tools]
    assert [m.content for m in session.messages if m.role == "tool"] == ["crm_find:7"]
    assert loads == [1]
    # loading the group did not reorder or change what is sent
    assert (first.tools, first.deferred) == (second.tools, second.deferred)


async def test_a_model_without_hosted_search_falls_back_to_dispatch_and_warns_once() -> None:
    turns = [
        call("deferred_tool_call", tool_name="email_list", arguments={"id": "inbox"}),
        {"text": "listed"},
        {"text": "again"},
    ]
    model = ScriptedModel(turns)
    rt, events = runtime(model)
    session = rt.session()
    await session.run("list mail")
    await session.run("once more")
    request = model.requests[0]
    names = [t.name for t in request.tools]
    assert "ToolSearch" in names and "deferred_tool_call" in names
    assert "email_list" not in names  # deferred, as dispatch does
    assert request.deferred == frozenset()
    assert any(s.key == SECTION_KEY and "email_list" in s.text for s in request.system)
    assert [m.content for m in session.messages if m.role == "tool"] == ["email_list:inbox"]
    assert session.state[DeferralState].strategy == "dispatch"
    (warning,) = [e for e in events if isinstance(e, ev.PluginWarning)]
    assert warning.plugin == "deferred-tools" and "strategy = native" in warning.message


async def test_provider_content_survives_a_session_round_trip(tmp_path: Any) -> None:
    from greenroom.models import ProviderContent

    blocks = ({"type": "server_tool_use", "id": "s1", "name": "tool_search_tool_bm25", "input": {"query": "x"}},)
    turn = Message("assistant", "hi", provider_content=ProviderContent("anthropic", blocks))
    model = ScriptedModel([turn])
    rt, _ = runtime(model)
    session = rt.session()
    await session.run("hello")
    path = session.save(tmp_path / "s.json")
    saved = json.loads(path.read_text())["messages"][1]["provider_content"]
    assert saved == {"provider": "anthropic", "blocks": [blocks[0]]}
    assert rt.load_session(path).messages[1].provider_content == ProviderContent("anthropic", blocks)
