"""What the gateway relays between its clients and an upstream server besides calls, with the
SDK's own server (``relay_server.py``) and clients: completions asked of the server that owns
the prompt or template, an upstream's ``elicitation/create`` put to the client that made the
call (or refused, saying why, when that client cannot answer), and resource updates passed on
to the clients subscribed to that resource and no other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
import pytest
from support.serve_testutil import HttpGateway, http_client, relay_config, stdio_gateway

pytestmark = [
    pytest.mark.anyio,
    # subscriptions are what 2025-11-25 clients use (and the conformance suite asks of a
    # gateway); the SDK warns that 2026-07-28 replaced them with Client.listen()
    pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed:mcp.MCPDeprecationWarning"),
]


def text_of(result: t.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, t.TextContent))


async def test_completions_are_asked_of_the_server_that_owns_the_prompt_or_template(
    tmp_path: Path, gr_home: Path
) -> None:
    async with stdio_gateway(relay_config(tmp_path)) as client:
        assert client.init.capabilities.completions is not None
        prompt = await client.complete(t.PromptReference(name="relay__trip"), {"name": "city", "value": "Pa"})
        assert prompt.completion.values == ["Palermo", "Paris"]
        # the template's completion is asked by the server's own template (it echoes it back)
        template = t.ResourceTemplateReference(uri="weather://{city}/today")
        done = await client.complete(template, {"name": "city", "value": "Po"})
        assert done.completion.values == ["Porto (weather://{city}/today)"]
        with pytest.raises(Exception, match="no prompt named 'nowhere__trip'"):
            await client.complete(t.PromptReference(name="nowhere__trip"), {"name": "city", "value": ""})


async def test_an_upstream_question_reaches_the_client_that_made_the_call_and_its_answer_goes_back(
    tmp_path: Path, gr_home: Path
) -> None:
    asked: list[str] = []

    async def answer(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        asked.append(params.message)
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    async with stdio_gateway(relay_config(tmp_path), elicitation_callback=answer) as client:
        result = await client.call_tool("relay__ask_name", {"why": "Who is booking?"})
    assert not result.is_error, text_of(result)
    assert text_of(result) == "accept: Ada"
    assert asked == ["Who is booking?"]


async def test_a_client_with_another_call_in_progress_on_that_server_is_still_asked(
    tmp_path: Path, gr_home: Path
) -> None:
    async def answer(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Grace"})

    flag = tmp_path / "done.flag"
    async with stdio_gateway(relay_config(tmp_path), elicitation_callback=answer) as client:
        waiting: list[t.CallToolResult] = []
        async with anyio.create_task_group() as tg:

            async def wait_for_flag() -> None:
                waiting.append(await client.call_tool("relay__when_file", {"path": str(flag)}))

            tg.start_soon(wait_for_flag)
            with anyio.fail_after(20):  # the first call is in progress on the server
                while not (tmp_path / "done.flag.waiting").exists():
                    await anyio.sleep(0.02)
            # both calls are this client's: the question is its own, whichever call asked
            asked = await client.call_tool("relay__ask_name", {"why": "Who?"})
            flag.write_text("done")
    assert text_of(asked) == "accept: Grace"
    assert text_of(waiting[0]) == "found done.flag"


async def test_a_client_that_cannot_elicit_is_never_asked_and_the_call_says_why(tmp_path: Path, gr_home: Path) -> None:
    async with stdio_gateway(relay_config(tmp_path), client="plain-client") as client:
        result = await client.call_tool("relay__ask_name", {"why": "Who is booking?"})
    assert result.is_error
    said = text_of(result)
    assert "'plain-client'" in said and "cannot answer elicitation/create" in said, said


class Heard:
    """The ``notifications/resources/updated`` one client received, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._got = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, t.ResourceUpdatedNotification):
            self.uris.append(message.params.uri)
            self._got.set()

    async def until(self, count: int) -> list[str]:
        with anyio.fail_after(20):
            while len(self.uris) < count:
                self._got = anyio.Event()
                await self._got.wait()
        return list(self.uris)


async def test_an_update_reaches_only_the_clients_subscribed_to_that_resource(tmp_path: Path, gr_home: Path) -> None:
    gateway = HttpGateway(relay_config(tmp_path))
    a, b = Heard(), Heard()
    try:
        async with http_client(gateway.url, on_message=a) as first, http_client(gateway.url, on_message=b) as second:
            assert first.init.capabilities.resources.subscribe is True
            await first.subscribe_resource("notes://a")
            await second.subscribe_resource("notes://b")
            await first.call_tool("relay__touch", {"uri": "notes://a"})
            await first.call_tool("relay__touch", {"uri": "notes://b"})
            # the server sent a's update first: once b's has reached its client, a's went where it goes
            assert await b.until(1) == ["notes://b"]
            assert await a.until(1) == ["notes://a"]
            await first.unsubscribe_resource("notes://a")
            await second.call_tool("relay__touch", {"uri": "notes://a"})
            await second.call_tool("relay__touch", {"uri": "notes://b"})
            assert await b.until(2) == ["notes://b", "notes://b"]
            assert a.uris == ["notes://a"]  # unsubscribed: the second update of a reached nobody
    finally:
        gateway.stop()


async def test_a_client_holds_so_many_subscriptions_and_no_more(tmp_path: Path, gr_home: Path) -> None:
    async with stdio_gateway(relay_config(tmp_path)) as client:
        for i in range(100):  # each a resource of the server's template
            await client.subscribe_resource(f"weather://c{i}/today")
        await client.subscribe_resource("weather://c0/today")  # held already: not one more
        with pytest.raises(Exception, match="this client holds 100 resource subscriptions, the gateway's limit"):
            await client.subscribe_resource("weather://c100/today")
        await client.unsubscribe_resource("weather://c0/today")
        await client.subscribe_resource("weather://c100/today")
