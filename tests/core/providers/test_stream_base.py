"""The streaming ``ProviderModel`` gives every provider (the OpenAI one first): text as it
comes, the response last, retries while nothing was shown, the error after, each wait
bounded, the events closed, and a provider without streaming still streams (whole)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from typing import Any

import anyio
import attrs
import pytest
from support.fake_llm_server import SleepRecorder

from greenroom.models import Message, ModelRequest, ModelResponse, StreamItem, TextDelta
from greenroom.providers import ProviderConnectionError, ProviderModel, ProviderTimeoutError
from greenroom.providers.options import ProviderOptions

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(system=(), tools=(), messages=(Message("user", "hi"),))


class Events:
    """A scripted attempt: its events, then maybe an error; records that it was closed."""

    def __init__(self, events: list[Any], error: Exception | None = None, hang_after: int | None = None) -> None:
        self.events, self.error, self.hang_after = events, error, hang_after
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[Any]:
        for i, event in enumerate(self.events):
            if i == self.hang_after:
                await anyio.sleep(30)
            yield event
        if self.error is not None:
            raise self.error

    async def close(self) -> None:
        self.closed = True


class Reader:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.done = False

    def feed(self, event: Any) -> Iterable[str]:
        if event == "end":
            self.done = True
            return ()
        self.text.append(event)
        return (event,)

    def finish(self) -> ModelResponse:
        if not self.done:
            raise ProviderConnectionError("toy", "the stream ended early")
        return ModelResponse(Message("assistant", "".join(self.text)))


class Toy(ProviderModel):
    provider = "toy"

    def __init__(self, attempts: list[Events], **options: Any) -> None:
        super().__init__("m", ProviderOptions(api_key_env="", **options))
        self.attempts = attempts
        self.opened: list[Events] = []
        self.retry = attrs.evolve(self.retry, sleep=SleepRecorder())

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        return {}

    def make_client(self, key: str) -> Any:
        return object()

    async def open_stream(self, client: Any, body: dict[str, Any]) -> Any:
        events = self.attempts.pop(0)
        self.opened.append(events)
        return events

    def stream_reader(self, request: ModelRequest) -> Reader:
        return Reader()


async def collect(model: ProviderModel) -> list[StreamItem]:
    async with aclosing(model.stream(REQUEST)) as items:
        return [item async for item in items]


async def test_text_then_the_response_and_the_events_are_closed() -> None:
    model = Toy([Events(["Hel", "lo", "end"])])
    items = await collect(model)
    assert items[:2] == [TextDelta("Hel"), TextDelta("lo")]
    assert isinstance(items[2], ModelResponse) and items[2].message.content == "Hello"
    assert model.opened[0].closed


async def test_a_stream_that_breaks_before_any_text_is_retried() -> None:
    broken = Events([], ProviderConnectionError("toy", "reset"))
    model = Toy([broken, Events(["ok", "end"])])
    items = await collect(model)
    assert [i.text for i in items if isinstance(i, TextDelta)] == ["ok"]
    assert broken.closed and len(model.retry.sleep.waits) == 1  # type: ignore[attr-defined]


async def test_a_stream_that_breaks_after_text_raises_and_is_not_retried() -> None:
    model = Toy([Events(["par"], ConnectionResetError("peer went away")), Events(["never", "end"])])
    shown: list[str] = []
    with pytest.raises(Exception, match="the stream broke after text was shown; not retried") as info:
        async with aclosing(model.stream(REQUEST)) as items:
            async for item in items:
                assert isinstance(item, TextDelta)
                shown.append(item.text)
    assert shown == ["par"] and len(model.attempts) == 1  # the second attempt never opened
    assert info.value.retryable is False  # type: ignore[attr-defined]


async def test_a_stream_that_ends_short_is_retried_then_reported() -> None:
    model = Toy([Events([]), Events([]), Events([])], max_retries=2)
    with pytest.raises(ProviderConnectionError, match="after 3 attempts: the stream ended early"):
        await collect(model)


async def test_each_wait_is_bounded_by_the_timeout() -> None:
    model = Toy([Events(["a", "b"], hang_after=1)], timeout=0.2, max_retries=0)
    with pytest.raises(ProviderTimeoutError, match=r"the stream did not end within 0\.2 s") as info:
        await collect(model)
    assert "text was shown" in str(info.value) and model.opened[0].closed


class Whole(Toy):
    """A provider that only answers whole."""

    open_stream = ProviderModel.open_stream  # type: ignore[assignment]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(Message("assistant", "all at once"))


async def test_a_provider_without_streaming_streams_its_whole_response() -> None:
    items = await collect(Whole([]))
    assert items[0] == TextDelta("all at once") and isinstance(items[1], ModelResponse)
