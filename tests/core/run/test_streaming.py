"""Streaming, from Python: a run drives a streaming model only when someone listens for
its text, hooks and events see the whole response either way, a stream that breaks ends
the run with a named error (never a half-read call), and ``Runtime.stream`` yields the
model's text and the run's events in order, ending the run the usual way when its reader
leaves early."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from greenroom import (
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    Plugin,
    RequestSent,
    ResponseReceived,
    RunFinished,
    RunStarted,
    StreamingModel,
    TextDelta,
    ToolExecuted,
    hookimpl,
    tool,
)
from greenroom.models import StreamItem
from greenroom.providers.scripted import ScriptedModel, StreamedModel, text_pieces
from greenroom.run.runtime import Runtime

pytestmark = pytest.mark.anyio

CALL = {"text": "Let me check.", "tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]}
ANSWER = {"text": "It is sunny in Oslo today."}


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class Seen(Plugin):
    """Records what the phase hooks get."""

    name = "seen"

    def __init__(self) -> None:
        super().__init__()
        self.responses: list[str] = []
        self.ends: list[str] = []

    @hookimpl
    def greenroom_after_inference(self, ctx: Any, response: ModelResponse) -> None:
        self.responses.append(response.message.content)

    @hookimpl
    def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
        self.ends.append(outcome.stop_reason)


class Recorder:
    """A streaming model that says which of its two ways was used."""

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        self.inner = StreamedModel(ScriptedModel(turns))
        self.used: list[str] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.used.append("complete")
        return await self.inner.complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.used.append("stream")
        async for item in self.inner.stream(request):
            yield item


class Breaking:
    """Streams a few words, then fails the way a provider reports a cut connection."""

    def __init__(self, *, raise_after: bool = True) -> None:
        self.raise_after = raise_after
        self.closed = False

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise AssertionError("a listener was given: the run must stream")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        try:
            yield TextDelta("The weather ")
            yield TextDelta("is ")
            if self.raise_after:
                raise ModelError("fake: the stream broke after 2 events (connection reset)")
        finally:
            self.closed = True


def test_the_scripted_stream_is_word_by_word_and_adds_up() -> None:
    text = "  It is\nsunny  in Oslo. "
    assert "".join(text_pieces(text)) == text
    assert text_pieces("It is sunny") == ["It ", "is ", "sunny"]
    assert isinstance(StreamedModel(ScriptedModel([])), StreamingModel)
    assert not isinstance(ScriptedModel([]), StreamingModel)


async def test_a_listener_gets_the_text_as_it_comes_and_hooks_get_whole_responses(
    make_runtime: Callable[..., Runtime],
) -> None:
    seen = Seen()
    model = Recorder([CALL, ANSWER])
    rt = make_runtime(model=model, tools=[weather], plugins=[seen])
    events: list[Any] = []
    rt.events.subscribe(events.append)
    deltas: list[str] = []
    outcome = await rt.run(rt.session(), "weather?", on_text=lambda d: deltas.append(d.text))
    assert model.used == ["stream", "stream"]
    assert "".join(deltas) == "Let me check.It is sunny in Oslo today."
    assert len(deltas) > 2  # piece by piece, not whole
    assert outcome.stop_reason == "final" and outcome.text == ANSWER["text"]
    assert seen.responses == [CALL["text"], ANSWER["text"]]  # AfterInference: whole responses
    responses = [e for e in events if isinstance(e, ResponseReceived)]
    assert [r.text for r in responses] == [CALL["text"], ANSWER["text"]]
    assert responses[0].tool_calls[0]["name"] == "weather"


async def test_without_a_listener_the_model_answers_whole(make_runtime: Callable[..., Runtime]) -> None:
    model = Recorder([CALL, ANSWER])
    rt = make_runtime(model=model, tools=[weather])
    outcome = await rt.run(rt.session(), "weather?")
    assert model.used == ["complete", "complete"] and outcome.text == ANSWER["text"]


async def test_a_model_that_cannot_stream_works_with_a_listener(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime([CALL, ANSWER], tools=[weather])
    deltas: list[TextDelta] = []
    outcome = await rt.run(rt.session(), "weather?", on_text=deltas.append)
    assert outcome.text == ANSWER["text"] and deltas == []


@pytest.mark.parametrize("raise_after", [True, False], ids=["breaks", "ends-early"])
async def test_a_stream_that_breaks_ends_the_run_with_a_named_error(
    make_runtime: Callable[..., Runtime], raise_after: bool
) -> None:
    seen = Seen()
    model = Breaking(raise_after=raise_after)
    rt = make_runtime(model=model, plugins=[seen])
    events: list[Any] = []
    rt.events.subscribe(events.append)
    session = rt.session()
    with pytest.raises(ModelError, match="broke after 2 events" if raise_after else "stream ended before"):
        await rt.run(session, "weather?", on_text=lambda d: None)
    assert model.closed
    assert seen.ends == ["error"] and seen.responses == []  # no half-read response reached a hook
    assert [m.role for m in session.messages] == ["user"]  # nothing of it in the session
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "error"
    assert not any(isinstance(e, ResponseReceived) for e in events)


async def test_runtime_stream_yields_text_and_events_in_order(make_runtime: Callable[..., Runtime]) -> None:
    seen = Seen()
    rt = make_runtime(model=StreamedModel(ScriptedModel([CALL, ANSWER])), tools=[weather], plugins=[seen])
    session = rt.session()
    items: list[Any] = []
    async with rt.stream(session, "weather?") as run:
        async for item in run:
            items.append(item)
    assert isinstance(items[0], RunStarted) and isinstance(items[-1], RunFinished)
    assert run.outcome is not None and run.outcome.stop_reason == "final" and run.outcome.text == ANSWER["text"]
    kinds = [type(i).__name__ for i in items]
    # each step: the request, its text as it came, the whole response, then the calls
    first = kinds.index("RequestSent")
    assert kinds[first + 1] == "TextDelta" and "ToolExecuted" in kinds
    assert kinds.index("ResponseReceived") < kinds.index("ToolExecuted") < len(kinds) - kinds[::-1].index("TextDelta")
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    assert text == CALL["text"] + ANSWER["text"]
    assert seen.ends == ["final"] and len(session.messages) == 4


async def test_leaving_the_stream_early_cancels_the_run_the_usual_way(make_runtime: Callable[..., Runtime]) -> None:
    seen = Seen()
    # an hour between words: only leaving the block ends this run
    model = StreamedModel(ScriptedModel([ANSWER]), pace=3600)
    rt = make_runtime(model=model, plugins=[seen])
    events: list[Any] = []
    rt.events.subscribe(events.append)
    session = rt.session()
    with anyio.fail_after(30):
        async with rt.stream(session, "weather?") as run:
            async for item in run:
                if isinstance(item, TextDelta):
                    break
    assert run.outcome is not None and run.outcome.stop_reason == "cancelled"
    assert seen.ends == ["cancelled"]
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "cancelled"
    assert [m.role for m in session.messages] == ["user"]


async def test_leaving_mid_call_answers_the_open_call(make_runtime: Callable[..., Runtime]) -> None:
    started = anyio.Event()

    @tool
    async def slow(city: str) -> str:
        """Waits for ever."""
        started.set()
        await anyio.sleep(3600)
        return "never"

    turns = [{"tool_calls": [{"name": "slow", "arguments": {"city": "Oslo"}}]}, ANSWER]
    rt = make_runtime(model=StreamedModel(ScriptedModel(turns)), tools=[slow])
    session = rt.session()
    with anyio.fail_after(30):
        async with rt.stream(session, "go") as run:
            async for item in run:
                if isinstance(item, ResponseReceived):
                    await started.wait()
                    break
    assert run.outcome is not None and run.outcome.stop_reason == "cancelled"
    last = session.messages[-1]
    assert last.role == "tool" and last.is_error and "cancelled" in last.content


async def test_a_run_that_fails_yields_its_end_then_raises(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(model=Breaking())
    items: list[Any] = []
    with pytest.raises(ModelError, match="stream broke"):
        async with rt.stream(rt.session(), "weather?") as run:
            async for item in run:
                items.append(item)
    assert isinstance(items[-1], RunFinished) and items[-1].stop_reason == "error"
    assert [i.text for i in items if isinstance(i, TextDelta)] == ["The weather ", "is "]
    assert run.outcome is not None and run.outcome.stop_reason == "error" and isinstance(run.error, ModelError)


async def test_two_streams_on_one_runtime_each_get_their_own_run(make_runtime: Callable[..., Runtime]) -> None:
    def policy(request: ModelRequest) -> Message:
        said = request.messages[-1].content
        return Message(role="assistant", content=f"echo {said}")

    from greenroom import PolicyModel

    rt = make_runtime(model=StreamedModel(PolicyModel(policy)))
    got: dict[str, list[Any]] = {}

    async def read(text: str) -> None:
        async with rt.stream(rt.session(), text) as run:
            got[text] = [item async for item in run]

    async with anyio.create_task_group() as tg:
        tg.start_soon(read, "one")
        tg.start_soon(read, "two")
    for text, items in got.items():
        starts = [i for i in items if isinstance(i, RunStarted)]
        assert len(starts) == 1 and starts[0].input == text
        assert "".join(i.text for i in items if isinstance(i, TextDelta)) == f"echo {text}"
        assert sum(isinstance(i, RequestSent) for i in items) == 1
        assert not any(isinstance(i, ToolExecuted) for i in items)


async def test_a_stream_is_read_inside_its_block(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime([ANSWER])
    stream = rt.stream(rt.session(), "hi")
    with pytest.raises(RuntimeError, match="async with"):
        stream.__aiter__()
