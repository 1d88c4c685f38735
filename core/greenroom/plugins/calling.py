"""How a hook is called: each implementation named, checked and bounded, and a hook whose
implementations wait called by one plain async loop in pluggy's order.

``PluginHost.register`` replaces each implementation's function with one made here:

- *named*: an exception it raises becomes a ``PluginHookError`` naming the plugin, its
  distribution and the hook; ``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit``
  raised by a plugin are failures like any other;
- *collected*: inside ``collecting`` (``greenroom.plugins.owners``) a failure is recorded
  and the implementation answers None (a failed wrapper passes the result through), so
  the others still run;
- *checked*: an answer of the wrong shape (``greenroom.plugins.answers``) is that
  implementation's failure;
- *bounded and off the loop*: an ``async def`` implementation, and a plain one of a hook
  called during a run (``offloop.RUN_HOOKS``, run in a worker thread unless its plugin
  is ``nonblocking``), becomes a coroutine function bounded by the host's hook timeout.

A hook with none of the latter is called by pluggy itself. A hook with one is called by
``call_async``: pluggy's own order (``HookCaller.get_hookimpls``, called last to first),
firstresult, and new- and old-style wrappers (the old style given a ``pluggy.Result``)
as pluggy's ``_multicall`` does them, with each coroutine awaited where pluggy would
have called the function, so one implementation finishes before the next starts.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Generator, Mapping
from typing import Any, NoReturn, cast

import anyio
import pluggy

from greenroom.failures import CONTAINED
from greenroom.plugins.answers import check_answer
from greenroom.plugins.offloop import in_thread, is_async
from greenroom.plugins.owners import Owner, contained, note

Limit = Callable[[], "float | None"]
"""Seconds an implementation that waits may take, read when it starts (None: no bound)."""


async def call_async(caller: pluggy.HookCaller, kwargs: Mapping[str, Any]) -> Any:
    """Call a hook whose implementations may wait: a list of the non-None answers, or for
    a firstresult hook the first one, as pluggy's call would give."""
    spec = caller.spec
    firstresult = bool(spec and spec.opts.get("firstresult"))
    results: list[Any] = []
    exception: BaseException | None = None
    teardowns: list[Generator[None, Any, Any]] = []
    try:
        for impl in reversed(caller.get_hookimpls()):
            try:
                args = [kwargs[name] for name in impl.argnames]
            except KeyError as exc:
                raise pluggy.HookCallError(f"hook call must provide argument {exc.args[0]!r}") from exc
            if impl.hookwrapper or impl.wrapper:
                teardown: Generator[None, Any, Any] = (
                    _old_style(impl.function, args) if impl.hookwrapper else cast(Any, impl.function(*args))
                )
                try:
                    next(teardown)
                except StopIteration:
                    _wrap_fail(teardown, "did not yield")
                teardowns.append(teardown)
                continue
            answer = impl.function(*args)
            if inspect.isawaitable(answer):
                answer = await answer
            if answer is not None:
                results.append(answer)
                if firstresult:
                    break
    except BaseException as exc:  # cancellation too: the wrappers see it, then it is raised
        exception = exc
    result: Any = (results[0] if results else None) if firstresult else results
    for teardown in reversed(teardowns):
        try:
            if exception is not None:
                teardown.throw(exception)
            else:
                teardown.send(result)
            teardown.close()
        except StopIteration as stop:
            result, exception = stop.value, None
            continue
        except BaseException as exc:
            exception = exc
            continue
        _wrap_fail(teardown, "has second yield")
    if exception is not None:
        raise exception
    return result


def _old_style(function: Callable[..., Any], args: list[Any]) -> Generator[None, Any, Any]:
    """An old-style ``hookwrapper`` as a new-style one: it is sent a ``pluggy.Result``."""
    teardown = function(*args)
    try:
        next(teardown)
    except StopIteration:
        _wrap_fail(teardown, "did not yield")
    try:
        outcome = pluggy.Result((yield), None)
    except BaseException as exc:
        outcome = pluggy.Result(None, exc)
    try:
        teardown.send(outcome)
    except StopIteration:
        pass
    else:
        _wrap_fail(teardown, "has second yield")
    finally:
        teardown.close()
    return outcome.get_result()


def _wrap_fail(wrapper: Any, message: str) -> NoReturn:
    code = getattr(wrapper, "gi_code", None)
    where = f"{code.co_name!r} {code.co_filename}:{code.co_firstlineno}" if code is not None else repr(wrapper)
    raise RuntimeError(f"wrap_controller at {where} {message}")


# ----------------------------------------------------------------------------- wrapping


def wrap(
    function: Callable[..., Any], owner: Owner, *, wrapper: bool, threaded: bool = False, limit: Limit = lambda: None
) -> Callable[..., Any]:
    """The function pluggy (or ``call_async``) calls in place of ``function``."""
    if wrapper:

        @functools.wraps(function)
        def steps(*args: Any, **kwargs: Any) -> _WrapperSteps:
            return _WrapperSteps(function(*args, **kwargs), owner)

        return steps
    if threaded:
        return _wrap_async(in_thread(function), owner, limit)
    if is_async(function):
        return _wrap_async(function, owner, limit)
    return _wrap_sync(function, owner)


def _wrap_sync(function: Callable[..., Any], owner: Owner) -> Callable[..., Any]:
    check = functools.partial(check_answer, owner.hook)

    @functools.wraps(function)
    def impl(*args: Any, **kwargs: Any) -> Any:
        try:
            answer = check(function(*args, **kwargs))
        except CONTAINED as exc:
            contained(owner, exc)
            return None
        note(owner, answer)
        return answer

    return impl


def _wrap_async(function: Callable[..., Any], owner: Owner, limit: Limit) -> Callable[..., Any]:
    @functools.wraps(function)
    async def impl(*args: Any, **kwargs: Any) -> Any:
        seconds = limit()
        bound = math.inf if seconds is None else seconds
        driven = _Driven(function(*args, **kwargs))
        try:
            with anyio.fail_after(None if math.isinf(bound) else bound):
                answer = check_answer(owner.hook, await driven)
        except TimeoutError as exc:
            late = TimeoutError(f"did not finish within {bound:g} s (the agent's tool_timeout)")
            contained(owner, late if not exc.args else exc)
            return None
        except GeneratorExit as exc:
            if driven.closed:  # closed from outside, not raised by the plugin: not its failure
                raise
            contained(owner, exc)
            return None
        except CONTAINED as exc:
            contained(owner, exc)
            return None
        note(owner, answer)
        return answer

    return impl


class _Driven:
    """Awaits a plugin's coroutine, telling a ``GeneratorExit`` the coroutine raised (the
    plugin's failure) from one that closes the awaiting chain from outside."""

    __slots__ = ("_coro", "closed")

    def __init__(self, coro: Any) -> None:
        self._coro = coro
        self.closed = False

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, method, value = self._coro, "send", None
        while True:
            try:
                yielded = getattr(coro, method)(value)
            except StopIteration as stop:
                return stop.value
            try:
                value, method = (yield yielded), "send"
            except GeneratorExit:
                self.closed = True
                coro.close()
                raise
            except BaseException as exc:
                value, method = exc, "throw"


class _WrapperSteps(Generator[None, object, object]):
    """A hook wrapper's generator as pluggy drives it (``next`` to set up, then ``send``
    or ``throw`` to tear down). An exception the wrapper itself raises is named; a
    wrapper whose failure was collected steps aside, passing the result or exception
    through."""

    def __init__(self, gen: Generator[None, object, object], owner: Owner) -> None:
        self._gen = gen
        self._owner = owner
        self._set_up = False
        self._failed = False

    @property
    def gi_code(self) -> Any:
        # pluggy names a wrapper that does not yield exactly once by its code
        return self._gen.gi_code  # type: ignore[attr-defined]

    def __next__(self) -> None:
        self._step(self._gen.send, None, thrown=None)
        self._set_up = True
        return None

    def send(self, value: object) -> None:
        if self._failed:
            raise StopIteration(value)
        return self._step(self._gen.send, value, thrown=None)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> None:  # type: ignore[override]
        exc = typ if isinstance(typ, BaseException) else (val if isinstance(val, BaseException) else typ(val))
        if self._failed:
            raise exc
        return self._step(self._gen.throw, exc, thrown=exc)

    def close(self) -> None:
        if not self._failed:
            self._step(lambda _: self._gen.close(), None, thrown=None)

    def _step(self, method: Callable[[Any], None], arg: object, thrown: BaseException | None) -> None:
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
