"""One hook implementation as pluggy calls it: named, awaited in pluggy's order, and
collected instead of raised where a hook must reach every plugin.

``PluginHost.register`` replaces each implementation's function with one made here, so
pluggy's own call loop (order, firstresult, old- and new-style wrappers) decides every
call:

- *named*: an exception it raises becomes a ``PluginHookError`` naming the plugin, its
  distribution and the hook;
- *awaited in order* (``call_in_passes``, for a hook with an ``async def``
  implementation): pluggy's call runs on the event loop in the calling task, and each
  async implementation's coroutine is driven on the spot, so pluggy sees its answer, not
  a coroutine. Most finish without waiting on the event loop and the call is one plain
  pluggy call. When one waits, that pass of pluggy's loop stops there, unseen by the
  other implementations and the wrappers; the calling task awaits the rest of the
  coroutine, then runs pluggy's call again, in which every implementation that already
  ran answers from the pass's record instead of running again, wrappers keep their
  place, and the one that waited gives its outcome (its answer, or its exception, which
  pluggy then handles as it would any). Each implementation runs once, in pluggy's order,
  and one finishes before the next starts; an async implementation runs in the calling
  task, where it would in a plain call;
- *collected*: inside ``collecting`` (``greenroom.plugins.owners``), a failure is
  recorded and the implementation answers None (a failed wrapper passes the result
  through), so the others still run;
- *bounded*: an implementation that waits is given the host's hook timeout; one that
  outlasts it is cancelled and fails, named like any other failure;
- *off the event loop*: a plain implementation of a hook called during a run (``RUN_HOOKS``)
  runs in a worker thread and is awaited like an async one, unless its plugin says its
  hooks never block (``Plugin.nonblocking``), so a plugin that blocks stalls only itself;
- *checked*: an answer of the wrong shape (``greenroom.plugins.answers``) is that
  implementation's failure, and ``SystemExit``, ``KeyboardInterrupt`` or ``GeneratorExit``
  raised by a plugin is a failure like any other.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Coroutine, Generator, Mapping
from contextvars import ContextVar
from typing import Any

import anyio

from greenroom.failures import CONTAINED
from greenroom.plugins.answers import check_answer
from greenroom.plugins.offloop import in_thread, is_async
from greenroom.plugins.owners import Owner, contained, note

Outcome = tuple[bool, Any]
"""How an implementation ended: (True, its answer) or (False, the exception it raised)."""


class _Pass:
    """The record of one hook call's passes through pluggy's loop."""

    __slots__ = ("outcomes", "steps", "waiting")

    def __init__(self) -> None:
        self.outcomes: dict[object, Outcome] = {}
        self.steps: dict[object, _WrapperSteps] = {}
        self.waiting: tuple[object, Coroutine[Any, Any, Any], Any] | None = None


class _Waiting(BaseException):
    """Ends a pass at an async implementation that waits on the event loop (a
    BaseException, so no plugin's ``except Exception`` can swallow it)."""


def current_pass() -> object | None:
    """The record of the hook call in passes now running on this thread, if any."""
    return _current.pass_


def is_waiting(exc: BaseException | None) -> bool:
    """Whether a pass ended at an implementation that waits (not a failure)."""
    return isinstance(exc, _Waiting)


class _Current(threading.local):
    # class defaults, so the check every plain call makes is one attribute read
    pass_: _Pass | None = None
    closing: bool = False  # a waiting coroutine is being closed (its GeneratorExit is not the plugin's)


_current = _Current()
_limit: ContextVar[float] = ContextVar("greenroom_hook_timeout", default=math.inf)
"""Seconds an implementation that waits may take, for the hook call in progress."""


async def call_in_passes(caller: Callable[..., Any], kwargs: Mapping[str, Any], timeout: float | None = None) -> Any:
    """Call a hook that has implementations that wait, awaiting each in pluggy's order,
    each bounded by ``timeout`` seconds."""
    record = _Pass()
    bound = _limit.set(math.inf if timeout is None else timeout)
    try:
        while True:
            outer = _current.pass_
            _current.pass_ = record
            try:
                return caller(**kwargs)
            except _Waiting:
                pass
            finally:
                _current.pass_ = outer
            assert record.waiting is not None
            key, coro, first = record.waiting
            record.waiting = None
            try:
                record.outcomes[key] = (True, await _Rest(coro, first))
            except BaseException as exc:  # cancellation too: the next pass gives it to pluggy, and wrappers see it
                record.outcomes[key] = (False, exc)
    finally:
        _limit.reset(bound)


class _Rest:
    """The rest of a coroutine that was driven until it first waited: awaiting this
    yields what it yielded and goes on as ``await coro`` would have."""

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self._coro = coro
        self._first = first

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, to_yield = self._coro, self._first
        while True:
            try:
                sent = yield to_yield
            except GeneratorExit:
                _current.closing = True
                try:
                    coro.close()
                finally:
                    _current.closing = False
                raise
            except BaseException as exc:
                try:
                    to_yield = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    to_yield = coro.send(sent)
                except StopIteration as stop:
                    return stop.value


def wrap(function: Callable[..., Any], owner: Owner, *, wrapper: bool, threaded: bool = False) -> Callable[..., Any]:
    """The function pluggy calls in place of ``function``."""
    if wrapper:
        return _wrap_wrapper(function, owner)
    if threaded:
        return _wrap_async(in_thread(function), owner)
    if is_async(function):  # the same test the host uses to call the hook in passes
        return _wrap_async(function, owner)
    return _wrap_sync(function, owner)


def _wrap_sync(function: Callable[..., Any], owner: Owner) -> Callable[..., Any]:
    check = functools.partial(check_answer, owner.hook)

    @functools.wraps(function)
    def impl(*args: Any, **kwargs: Any) -> Any:
        record = _current.pass_
        if record is None:  # the hot path: a plain pluggy call
            try:
                answer = check(function(*args, **kwargs))
            except CONTAINED as exc:
                contained(owner, exc)
                return None
            note(owner, answer)
            return answer
        done = record.outcomes.get(impl)
        if done is not None:
            return done[1]
        _current.pass_ = None  # a hook this one calls is a call of its own
        try:
            answer = check(function(*args, **kwargs))
        except CONTAINED as exc:
            contained(owner, exc)
            answer = None
        finally:
            _current.pass_ = record
        note(owner, answer)
        record.outcomes[impl] = (True, answer)
        return answer

    return impl


def _wrap_async(function: Callable[..., Any], owner: Owner) -> Callable[..., Any]:
    async def named(*args: Any, **kwargs: Any) -> Any:
        limit = _limit.get()
        try:
            # the bound is entered where the implementation starts, so its own cancel
            # scopes nest inside it however the passes resume it
            with anyio.fail_after(None if math.isinf(limit) else limit):
                answer = check_answer(owner.hook, await function(*args, **kwargs))
        except TimeoutError as exc:
            late = TimeoutError(f"did not finish within {limit:g} s (the agent's tool_timeout)")
            contained(owner, late if not exc.args else exc)
            return None
        except GeneratorExit as exc:
            if _current.closing:  # closed from outside, not raised by the plugin
                raise
            contained(owner, exc)
            return None
        except CONTAINED as exc:
            contained(owner, exc)
            return None
        note(owner, answer)
        return answer

    @functools.wraps(function)
    def impl(*args: Any, **kwargs: Any) -> Any:
        record = _current.pass_
        if record is None:
            return named(*args, **kwargs)  # a plain pluggy call: the coroutine, as pluggy gives it
        done = record.outcomes.get(impl)
        if done is not None:
            if done[0]:
                return done[1]
            raise done[1]
        coro = named(*args, **kwargs)
        _current.pass_ = None
        try:
            first = coro.send(None)
        except StopIteration as stop:
            record.outcomes[impl] = (True, stop.value)
            return stop.value
        finally:
            _current.pass_ = record
        record.waiting = (impl, coro, first)
        raise _Waiting

    return impl


def _wrap_wrapper(function: Callable[..., Any], owner: Owner) -> Callable[..., Any]:
    @functools.wraps(function)
    def impl(*args: Any, **kwargs: Any) -> _WrapperSteps:
        record = _current.pass_
        if record is None:
            return _WrapperSteps(function(*args, **kwargs), owner)
        steps = record.steps.get(impl)
        if steps is None:
            steps = record.steps[impl] = _WrapperSteps(function(*args, **kwargs), owner)
        return steps

    return impl


class _WrapperSteps(Generator[None, object, object]):
    """A hook wrapper's generator as pluggy drives it (``next`` to set up, then ``send`` or
    ``throw`` to tear down). An exception the wrapper itself raises is named; a wrapper
    whose failure was collected steps aside, passing the result or exception through; a
    pass that ends waiting never reaches the wrapper, which keeps its place for the next."""

    def __init__(self, gen: Generator[None, object, object], owner: Owner) -> None:
        self._gen = gen
        self._owner = owner
        self._set_up = False
        self._failed = False
        self._keep_open = False

    @property
    def gi_code(self) -> Any:
        # pluggy names a wrapper that does not yield exactly once by its code
        return self._gen.gi_code  # type: ignore[attr-defined]

    def __next__(self) -> None:
        if self._set_up:
            return None  # a later pass: the wrapper still waits at its yield
        self._step(self._gen.send, None, thrown=None)
        self._set_up = True
        return None

    def send(self, value: object) -> None:
        if isinstance(getattr(value, "exception", None), _Waiting):
            # an old-style wrapper's teardown in a pass that ended waiting: pluggy closes it next
            self._keep_open = True
            raise StopIteration
        if self._failed:
            raise StopIteration(value)
        return self._step(self._gen.send, value, thrown=None)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> None:  # type: ignore[override]
        exc = typ if isinstance(typ, BaseException) else (val if isinstance(val, BaseException) else typ(val))
        if isinstance(exc, _Waiting) or self._failed:
            raise exc
        return self._step(self._gen.throw, exc, thrown=exc)

    def close(self) -> None:
        if self._keep_open:
            self._keep_open = False  # an old-style wrapper waiting for the next pass stays open
            return
        if not self._failed:
            self._step(lambda _: self._gen.close(), None, thrown=None)

    def _step(self, method: Callable[[Any], None], arg: object, thrown: BaseException | None) -> None:
        record = _current.pass_
        _current.pass_ = None  # a hook the wrapper calls is a call of its own
        try:
            method(arg)
            return None
        except StopIteration:
            raise
        except CONTAINED as exc:
            if exc is thrown:
                raise  # passed through: not this wrapper's failure
            contained(self._owner, exc)
            self._failed = True
            if thrown is not None:
                raise thrown from None
            if not self._set_up:
                return None  # the set-up failed: yield, as a wrapper does, and step aside
            raise StopIteration(arg) from None
        finally:
            _current.pass_ = record
