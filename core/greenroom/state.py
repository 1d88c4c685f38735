"""Typed plugin state with run, session and profile scope, and the shared vocabulary.

Plugins register attrs classes as state keys. Run-scoped state starts fresh at each run,
session-scoped state lives as long as the session (and is saved with it), profile-scoped
state belongs to the agent across sessions (a persistence plugin loads and saves
it). ``ToolUsage``, ``ToolPriors`` and ``Scripting`` are defined here so plugins cooperate
without importing each other.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import attrs

from greenroom._support.lazy import defined_in

T = TypeVar("T")


class Scope(enum.Enum):
    RUN = "run"
    SESSION = "session"
    PROFILE = "profile"


@attrs.frozen
class StateKey:
    cls: type
    scope: Scope
    factory: Callable[[], Any]
    owner: str
    upgrade: Callable[[Any], Any] | None = None
    """Turns a value saved by an older version of the owner into today's shape, before it
    is structured (a session file outlives the code that wrote it)."""

    @property
    def id(self) -> str:
        """The key a session file keeps this state under: where the class is defined,
        whether or not ``greenroom`` has presented it as its own since."""
        return f"{defined_in(self.cls)}.{self.cls.__qualname__}"


class StateError(KeyError):
    """A state type that was never registered, or registered twice."""

    def __str__(self) -> str:
        return str(self.args[0])


class StateRegistry:
    """The state types known to a runtime (filled through ``greenroom_register_state``)."""

    def __init__(self) -> None:
        self._keys: dict[type, StateKey] = {}

    def register(
        self,
        cls: type,
        scope: Scope,
        *,
        factory: Callable[[], Any] | None = None,
        owner: str = "core",
        upgrade: Callable[[Any], Any] | None = None,
    ) -> None:
        if not attrs.has(cls):
            raise StateError(f"state type {cls.__qualname__} (from {owner}) must be an attrs class")
        existing = self._keys.get(cls)
        if existing is not None:
            if existing.scope is scope:
                return  # two plugins sharing a core type is the point of shared state
            raise StateError(
                f"state type {cls.__qualname__} registered as {existing.scope.value} by "
                f"{existing.owner} and as {scope.value} by {owner}"
            )
        self._keys[cls] = StateKey(cls, scope, factory or cls, owner, upgrade)

    def __iter__(self) -> Iterator[StateKey]:
        return iter(self._keys.values())

    def key(self, cls: type) -> StateKey:
        try:
            return self._keys[cls]
        except KeyError:
            raise StateError(f"state type {cls.__qualname__} is not registered") from None

    def by_id(self) -> dict[str, StateKey]:
        return {k.id: k for k in self._keys.values()}


class StateStore:
    """Live state for one scope: instances created on first access."""

    def __init__(self, registry: StateRegistry, scope: Scope) -> None:
        self._registry = registry
        self._scope = scope
        self._values: dict[type, Any] = {}

    def __getitem__(self, cls: type[T]) -> T:
        if cls not in self._values:
            key = self._registry.key(cls)
            if key.scope is not self._scope:
                raise StateError(f"{cls.__qualname__} is {key.scope.value}-scoped, not {self._scope.value}")
            self._values[cls] = key.factory()
        return self._values[cls]  # type: ignore[no-any-return]

    def __contains__(self, cls: type) -> bool:
        return cls in self._values

    def set(self, value: Any) -> None:
        self._registry.key(type(value))
        self._values[type(value)] = value

    def items(self) -> Iterator[tuple[type, Any]]:
        return iter(list(self._values.items()))

    def clear(self) -> None:
        self._values.clear()


class Snapshot(Mapping[type, Any]):
    """A read-only copy of every state value, indexed by state type."""

    def __init__(self, values: Mapping[type, Any]) -> None:
        self._values = {k: copy.deepcopy(v) for k, v in values.items()}

    def __getitem__(self, cls: type[T]) -> T:  # type: ignore[override]
        try:
            return self._values[cls]  # type: ignore[no-any-return]
        except KeyError:
            raise StateError(f"no {cls.__qualname__} in this snapshot") from None

    def __iter__(self) -> Iterator[type]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


@attrs.define
class ToolUsage:
    """Which tools were called at which step of the current run (run scope).

    ``steps`` counts model calls; ``calls`` maps a step to the real tool names called in
    it (after the resolve hook unwrapped any dispatcher).
    """

    steps: int = 0
    calls: dict[int, list[str]] = attrs.field(factory=dict)
    searches: list[tuple[int, str, tuple[str, ...]]] = attrs.field(factory=list)
    """The run's tool searches: (step, query, the tools it named), at most ``MAX_SEARCHES``."""

    MAX_SEARCHES = 256

    def record(self, step: int, name: str) -> None:
        self.calls.setdefault(step, []).append(name)

    def record_search(self, step: int, query: str, found: tuple[str, ...]) -> None:
        """A search the model made and the tools it named (a search plugin records it)."""
        if len(self.searches) < self.MAX_SEARCHES:
            self.searches.append((step, query, found))

    def failed_searches(self) -> list[tuple[str, tuple[str, ...]]]:
        """(query, found) of the searches after which no tool they named was called in the
        run: they found nothing, or nothing the model went on to use."""
        out = []
        for step, query, found in self.searches:
            later = {n for s, names in self.calls.items() if s >= step for n in names}
            if not later.intersection(found):
                out.append((query, found))
        return out

    def called_in(self, step: int) -> set[str]:
        return set(self.calls.get(step, ()))

    def presence(self) -> dict[str, float]:
        """Per tool, the share of steps in which it was called at least once."""
        if self.steps <= 0:
            return {}
        seen: dict[str, int] = {}
        for names in self.calls.values():
            for name in set(names):
                seen[name] = seen.get(name, 0) + 1
        return {name: min(1.0, count / self.steps) for name, count in seen.items()}

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for names in self.calls.values():
            for name in names:
                out[name] = out.get(name, 0) + 1
        return out


@attrs.define
class ToolPriors:
    """Per-agent learned use probability of each tool (profile scope).

    ``p`` is the probability that the tool is called in a given step; ``sessions`` is how
    many sessions went into it; ``loaded`` says whether a store filled it. ``sets`` says
    which tools are used *together*: for each set of tools one or more recent sessions
    called (exactly those), the share of sessions that did (an EWMA like ``p``; the sets
    a store keeps are bounded, so the shares may sum to less than 1); empty when the store
    does not know (an older document). ``steps`` is the mean number of model calls per
    session (0: not known).
    """

    p: dict[str, float] = attrs.field(factory=dict)
    sessions: int = 0
    loaded: bool = False
    default: float = 0.01
    sets: dict[frozenset[str], float] = attrs.field(factory=dict)
    steps: float = 0.0

    def get(self, name: str) -> float:
        return self.p.get(name, self.default)


@attrs.define
class Scripting:
    """Whether the model can call tools from a script in this run (run scope).

    A plugin that runs the model's scripts sets ``tool`` (the name of its tool) at
    RunStart; a plugin that shows tools to the model (a tool search, a listing) may then
    show each one as a script calls it: ``await tools.NAME(args)``.
    """

    tool: str | None = None
    """The tool that runs scripts; None when nothing runs them in this run."""


def register_core_state(registry: StateRegistry) -> None:
    registry.register(ToolUsage, Scope.RUN)
    registry.register(ToolPriors, Scope.PROFILE)
    registry.register(Scripting, Scope.RUN)
