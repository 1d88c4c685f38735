"""Judging a session: were the task's gold tools called with valid arguments, and does its
checker agree.

A checker is the user's code, and any of it can go wrong: the module does not import, the
function raises (``SystemExit`` included), returns something that is not ``True`` or
``False`` (an ``async def`` checker returns a coroutine), or never returns. Each of these is
a *check error*: the session is not counted as done, and the error says what happened, for
the report to count and show per arm; the evaluation goes on.

A checker runs in a daemon thread of its own, so the event loop never waits for it, and
is waited for at most ``timeout`` seconds. A thread cannot be stopped: one that has not
answered by then is left running (a daemon thread does not keep the process alive) and
that checker is not asked again in this evaluation; its later sessions are check errors
at once. So a hung checker costs one thread and one wait, not one per session.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable, Sequence

import anyio
import anyio.to_thread

from greenroom_lab.eval.tasks import Call, Task, Transcript

CHECK_TIMEOUT = 10.0
"""Seconds a checker may take for one session (``--check-timeout``)."""

_SHOWN = 300
"""Characters of an exception's message kept in a check error."""


class CheckFailed(Exception):
    """A checker that could not give a verdict; the message says why."""


def _short(exc: BaseException) -> str:
    text = str(exc)
    text = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _import(spec: str) -> Callable[[Transcript], object]:
    module, _, attr = spec.partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except BaseException as exc:  # a module may raise anything as it imports, SystemExit too
        raise CheckFailed(f"check {spec}: cannot import it ({_short(exc)})") from None
    if not callable(fn):
        raise CheckFailed(f"check {spec}: not a function but {type(fn).__name__}")
    return fn  # type: ignore[no-any-return]


def _verdict(spec: str, transcript: Transcript) -> bool:
    fn = _import(spec)  # imported modules are cached by Python: later calls cost a lookup
    try:
        answer = fn(transcript)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from a checker are its failure
        raise CheckFailed(f"check {spec} raised {_short(exc)}") from None
    if not isinstance(answer, bool):
        if inspect.iscoroutine(answer):
            answer.close()  # never awaited: closed, so Python does not warn about it
        raise CheckFailed(f"check {spec} returned {type(answer).__name__}, not True or False")
    return answer


class Judge:
    """Decides whether sessions did their tasks, asking the tasks' checkers (see the module)."""

    def __init__(self, timeout: float = CHECK_TIMEOUT) -> None:
        self.timeout = timeout
        self._hung: dict[str, str] = {}

    async def __call__(self, task: Task, calls: Sequence[Call], answer: str) -> bool:
        """Whether the task was done; raises ``CheckFailed`` when its checker could not say."""
        if not set(task.gold) <= {c.tool for c in calls if c.valid}:
            return False
        if task.check is None:
            return True
        hung = self._hung.get(task.check)
        if hung is not None:
            raise CheckFailed(hung)
        return await self._ask(task.check, Transcript(task, tuple(calls), answer))

    async def _ask(self, spec: str, transcript: Transcript) -> bool:
        outcome: list[bool | CheckFailed] = []
        done = threading.Event()

        def work() -> None:
            try:
                outcome.append(_verdict(spec, transcript))
            except CheckFailed as exc:
                outcome.append(exc)
            finally:
                done.set()

        threading.Thread(target=work, name=f"greenroom eval check {spec}", daemon=True).start()
        # the worker that waits returns within the timeout whatever the checker does
        await anyio.to_thread.run_sync(done.wait, self.timeout, abandon_on_cancel=True)
        if not outcome:
            message = (
                f"check {spec} gave no answer within {self.timeout:g} s; "
                "it is left running and not asked again in this evaluation"
            )
            self._hung[spec] = message
            raise CheckFailed(message)
        verdict = outcome[0]
        if isinstance(verdict, CheckFailed):
            raise verdict
        return verdict
