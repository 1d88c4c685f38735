"""Who a hook implementation belongs to, and where its failures and answers go: raised
named (``Owner.contain``), or collected for a call that must reach every implementation
(``collecting``), and which plugin answered what (``attributing``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import attrs

from greenroom.failures import PluginHookError

_failures: ContextVar[list[PluginHookError] | None] = ContextVar("greenroom_hook_failures", default=None)
_answers: ContextVar[list[tuple[Owner, Any]] | None] = ContextVar("greenroom_hook_answers", default=None)


class collecting:
    """Record hook failures in the yielded list instead of raising them (a plain class:
    a step enters one per phase hook)."""

    __slots__ = ("_token", "failures")

    def __init__(self) -> None:
        self.failures: list[PluginHookError] = []

    def __enter__(self) -> list[PluginHookError]:
        self._token = _failures.set(self.failures)
        return self.failures

    def __exit__(self, *exc: object) -> None:
        _failures.reset(self._token)


@contextmanager
def attributing() -> Iterator[list[tuple[Owner, Any]]]:
    """Record every implementation's answer with its owner (which plugin said what)."""
    answers: list[tuple[Owner, Any]] = []
    token = _answers.set(answers)
    try:
        yield answers
    finally:
        _answers.reset(token)


def note(owner: Owner, answer: Any) -> None:
    answers = _answers.get()
    if answers is not None:
        answers.append((owner, answer))


@attrs.frozen
class Owner:
    """Who an implementation belongs to, for naming its failures."""

    plugin: str
    distribution: str
    hook: str

    def contain(self, exc: BaseException) -> PluginHookError | None:
        """The error to raise for ``exc``, or None once it is recorded (``collecting``).

        A ``PluginHookError`` stays as it is: it names the plugin whose hook raised it
        (a ranker failing inside another plugin's ``ctx.search``, say)."""
        if isinstance(exc, PluginHookError):
            failure = exc
        else:
            failure = PluginHookError(self.plugin, self.distribution, self.hook, exc)
        failures = _failures.get()
        if failures is None:
            return failure
        failures.append(failure)
        return None


class own_calls:
    """Hooks a plugin calls from inside its own (``ctx.search``, ``ctx.load_group``) are
    calls of their own: their failures raise where the plugin can catch them, never land
    in the list the outer call collects, and their answers are not the outer call's."""

    __slots__ = ("_answers", "_failures")

    def __enter__(self) -> None:
        self._failures, self._answers = _failures.set(None), _answers.set(None)

    def __exit__(self, *exc: object) -> None:
        _answers.reset(self._answers)
        _failures.reset(self._failures)


def collecting_now() -> bool:
    """Whether a call that collects failures or answers is in progress here (a hook called
    now is called from inside one of its implementations)."""
    return _failures.get() is not None or _answers.get() is not None


def contained(owner: Owner, exc: BaseException) -> None:
    """Raise the named error for ``exc``, or return None once it is recorded."""
    failure = owner.contain(exc)
    if failure is exc:
        raise exc
    if failure is not None:
        raise failure from exc
