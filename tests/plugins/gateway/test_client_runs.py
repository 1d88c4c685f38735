"""What one gateway client's run may never get from another's, or from a failure: tools
another client's call loaded are judged for this client before they are offered or run;
a client whose run failed to start is refused, never served unscoped; a call that ran
stands even when the next view cannot be built."""

from __future__ import annotations

from typing import Any

import pytest

from greenroom import Plugin, Runtime, ToolGroup, hookimpl, make_plugin_host, tool
from greenroom.providers.scripted import ScriptedModel
from greenroom_gateway.clients import ClientRun

pytestmark = pytest.mark.anyio


@tool
def srv_read(x: str) -> str:
    """Read."""
    return f"read {x}"


@tool
def srv_secret_delete(x: str) -> str:
    """Delete."""
    return f"DELETED {x}"


async def load_server() -> list[Any]:
    return [srv_read, srv_secret_delete]  # its cached listing named only srv_read


class Guard(Plugin):
    name = "guard"
    nonblocking = True

    def __init__(self, fail_first: int = 0) -> None:
        super().__init__()
        self.fail_first = fail_first

    @hookimpl
    def greenroom_hidden_tools(self, ctx: Any, tools: Any) -> list[str]:
        if self.fail_first > 0:
            self.fail_first -= 1
            raise RuntimeError("policy backend down")
        return [d.name for d in tools if "secret" in d.name]


def runtime(*plugins: Plugin) -> Runtime:
    group = ToolGroup("mcp:srv", "srv", "a server", load_server, known=[srv_read.descriptor])
    return Runtime(model=ScriptedModel([]), groups=[group], host=make_plugin_host(records=[], extra=list(plugins)))


async def test_tools_another_clients_call_loaded_are_judged_for_this_client() -> None:
    rt = runtime(Guard())
    a, b = ClientRun(rt), ClientRun(rt)
    await a.ready()
    await b.ready()  # b's scope was worked out before the group loaded
    await a.call("srv_read", {"x": "1"})  # a's call loads the group, which brings an undeclared tool
    await b.call("srv_read", {"x": "2"})
    assert "srv_secret_delete" not in b.view.tool_names()
    result, _ = await b.call("srv_secret_delete", {"x": "prod"})
    assert result.is_error and "no tool named 'srv_secret_delete'" in result.content


async def test_a_client_whose_run_failed_to_start_is_refused_not_served_unscoped() -> None:
    rt = runtime(Guard(fail_first=1))
    client = ClientRun(rt)
    for _ in range(2):  # the second request must not find a run that skipped its scope
        with pytest.raises(Exception, match="policy backend down"):
            await client.ready()
    assert not client.run.started
    await client.end()
    assert client.run.ended  # it had begun: RunEnd ran for it


class FlakyView(Plugin):
    name = "flaky-view"
    nonblocking = True
    steps = 0

    @hookimpl
    def greenroom_before_inference(self, ctx: Any, request: Any) -> None:
        FlakyView.steps += 1
        if FlakyView.steps == 2:
            raise RuntimeError("view service down")


async def test_a_call_that_ran_stands_when_the_next_view_cannot_be_built() -> None:
    ran: list[str] = []

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        ran.append(f"${amount}")
        return f"paid ${amount}"

    FlakyView.steps = 0
    rt = Runtime(model=ScriptedModel([]), tools=[pay], host=make_plugin_host(records=[], extra=[FlakyView()]))
    seen: list[Any] = []
    rt.events.subscribe(seen.append)
    client = ClientRun(rt)
    await client.ready()
    before = client.view
    result, changed = await client.call("pay", {"amount": 100})
    assert result.content == "paid $100" and not result.is_error and ran == ["$100"]
    assert client.view == before and not changed
    assert any(e.kind == "error" and getattr(e, "plugin", "") == "flaky-view" for e in seen)
