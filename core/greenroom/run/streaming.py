"""A model's text as it arrives, and a run as an async iterator of what happens in it.

``respond`` is one model call of a run: ``stream(request)`` when the model streams and
someone listens for text (each ``TextDelta`` handed on as it arrives), ``complete(request)``
otherwise. Either way the run takes the one complete ``ModelResponse`` through
AfterInference, so hooks see whole responses whether or not the text was streamed.

``RunStream`` is ``Runtime.stream``: the run driven in a task of its own while its caller
reads, in order, the model's text deltas and the run's events (``greenroom.events``), the
last of which is ``RunFinished``. Leaving its ``async with`` block early ends the run the
way a cancellation does (RunEnd, ``run_end``, the open calls answered).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from greenroom import events as ev
from greenroom.failures import first_error
from greenroom.models import Model, ModelError, ModelRequest, ModelResponse, StreamingModel, TextDelta, TextListener
from greenroom.run.context import RunOutcome, current_run

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from greenroom.run.driver import Run

"""Hears each piece of the model's text as it arrives (``Run.drive(model, on_text=...)``)."""

RunItem = TextDelta | ev.Event
"""What ``Runtime.stream`` yields: the model's text as it arrives, and the run's events."""

CLOSE_WITHIN = 5.0
"""Seconds a model's stream gets to close (its HTTP response, say) once the run stops
reading it; a stream that takes longer is left behind, the run goes on ending."""


async def respond(model: Model, request: ModelRequest, on_text: TextListener | None = None) -> ModelResponse:
    """The model's whole response to ``request``.

    With a listener and a model that streams, the text deltas go to ``on_text`` as they
    arrive and the response is the one the stream ends with; a stream that ends without
    one is a ``ModelError`` (nothing of a half-read response reaches the run). The stream
    is closed whatever happens, a cancelled one too. Without a listener, or for a model
    that does not stream, this is ``model.complete(request)``.
    """
    if on_text is None or not isinstance(model, StreamingModel):
        return await model.complete(request)
    stream = model.stream(request)
    try:
        async for item in stream:
            if isinstance(item, ModelResponse):
                return item  # the last item: nothing after it is read
            if not isinstance(item, TextDelta):
                raise ModelError(
                    f"{type(model).__name__}.stream yielded a {type(item).__name__}; "
                    "a model's stream yields TextDelta items, then one ModelResponse"
                )
            if item.text:
                on_text(item)
    finally:
        await _close(stream)
    raise ModelError(f"{type(model).__name__}: the stream ended before the whole response arrived")


async def _close(stream: Any) -> None:
    """Close a model's stream (an async generator's ``aclose``), bounded and shielded, so a
    cancelled run still releases the connection under it."""
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    with anyio.move_on_after(CLOSE_WITHIN, shield=True):
        await aclose()


class RunStream:
    """One run, read as it happens: ``Runtime.stream(session, user_input)``.

    ::

        async with runtime.stream(session, "hello") as run:
            async for item in run:
                if isinstance(item, TextDelta):
                    print(item.text, end="")
        print(run.outcome.stop_reason)

    Items are ``TextDelta`` (the model's text as it arrives, when the model streams) and
    the run's events, in order; the last is ``RunFinished``. ``outcome`` is set once the
    run has ended. A run that ends with an error (a model that gave up, a phase hook that
    failed) yields its ``RunFinished`` and then raises that error, as ``Runtime.run``
    does. Leaving the block before the end (``break``, an exception, a cancellation)
    cancels the run: RunEnd runs, the trace ends with ``run_end`` ("cancelled"), and the
    session keeps everything up to that point, its open calls answered.
    """

    def __init__(self, run: Run, model: Model) -> None:
        self._run = run
        self._model = model
        self.outcome: RunOutcome | None = None
        """How the run ended; None until it has."""
        self.error: BaseException | None = None
        """What ended the run with stop reason ``error``, when something was raised."""
        send, receive = anyio.create_memory_object_stream[RunItem](math.inf)
        self._send: MemoryObjectSendStream[RunItem] = send
        self._receive: MemoryObjectReceiveStream[RunItem] = receive
        self._group: TaskGroup | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._raised = False

    @property
    def run(self) -> Run:
        """The ``Run`` being driven (``run.ctx.run_id`` is its id)."""
        return self._run

    async def __aenter__(self) -> RunStream:
        if self._group is not None:
            raise RuntimeError("a RunStream runs once: call runtime.stream(...) again for another run")
        self._unsubscribe = self._run.parts.events.subscribe(self._on_event)
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        group.start_soon(self._drive)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        group = self._group
        assert group is not None
        if self.outcome is None:  # left before the end: the run ends as a cancelled one does
            group.cancel_scope.cancel()
        try:
            return await group.__aexit__(exc_type, exc, tb)
        except BaseException as raised:  # what the block raised, not the task group carrying it
            error = first_error(raised)
            if error is raised:
                raise
            raise error from None
        finally:
            if self._unsubscribe is not None:
                self._unsubscribe()
            self._receive.close()

    def __aiter__(self) -> RunStream:
        if self._group is None:
            raise RuntimeError("use the stream in a block: async with runtime.stream(session, text) as run: ...")
        return self

    async def __anext__(self) -> RunItem:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self.error is not None and not self._raised:
                self._raised = True
                raise self.error from None
            raise StopAsyncIteration from None

    async def _drive(self) -> None:
        try:
            self.outcome = await self._run.drive(self._model, on_text=self._put)
        except anyio.get_cancelled_exc_class():
            self.outcome = self._run.outcome
            raise
        except BaseException as exc:  # raised to the reader after the run's last event
            self.error = exc
            self.outcome = self._run.outcome
        finally:
            self._send.close()

    def _on_event(self, event: ev.Event) -> None:
        if current_run() is self._run.ctx:  # the runtime's other runs have readers of their own
            self._put(event)

    def _put(self, item: RunItem) -> None:
        try:
            self._send.send_nowait(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # nobody reads any more: the run goes on to its end regardless
