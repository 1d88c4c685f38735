"""What plugins see of a run (``RunContext``), what a gate decides, how a run ended."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import attrs

from greenroom import events as ev
from greenroom.config import AgentConfig
from greenroom.failures import RunFailure
from greenroom.models import Usage, supports_native_tool_search
from greenroom.search import Ranking, ScoredTool, SearchQuery
from greenroom.state import (
    Scope,
    StateStore,
    ToolPriors,
    ToolUsage,
)
from greenroom.tools import Tool, ToolDescriptor, ToolResult
from greenroom.tools.groups import ToolGroup
from greenroom.tools.toolset import ToolSet

if TYPE_CHECKING:
    from greenroom.runtime import Runtime
    from greenroom.session import Session


@attrs.frozen
class Decision:
    """What a BeforeToolExecute gate decided."""

    action: Literal["allow", "block", "answer"]
    reason: str = ""
    result: ToolResult | None = None

    @classmethod
    def allow(cls) -> Decision:
        return cls("allow")

    @classmethod
    def block(cls, reason: str) -> Decision:
        return cls("block", reason=reason)

    @classmethod
    def answer(cls, result: ToolResult | str) -> Decision:
        if isinstance(result, str):
            result = ToolResult(result)
        return cls("answer", result=result)


@attrs.frozen
class RunOutcome:
    """How a run ended: its answer (``final``), or why it stopped.

    ``error`` is the message of what ended the run with stop reason ``error``;
    ``failure`` says the same as data (the plugin, distribution and hook when a plugin
    failed).
    """

    run_id: str
    text: str
    steps: int
    stop_reason: Literal["final", "max_steps", "cancelled", "error"]
    usage: Usage
    error: str | None = None
    failure: RunFailure | None = None


class RunContext:
    """What plugins see of a run: the whole plugin surface. Tools never see this.

    Identity: ``run_id``, ``session_id``, ``input``, ``step``, ``agent``.
    State: ``state`` (this run), ``session_state``, ``profile_state``, and the shared
    vocabulary ``usage`` (calls of this run) and ``priors`` (learned per agent).
    Tools: ``tools`` (every loaded tool), ``visible_descriptors()`` (what this agent may
    use), ``hidden``, ``groups``, ``group_of``, ``load_group``.
    The model: ``model_name`` and ``hosted_tool_search``.
    Doing things: ``emit`` an event, ``search`` through the ranking hooks, ``call_hook``
    (a contribution hook, such as one a plugin declared), ``on_close`` (release something
    when the runtime closes), ``config_dir`` (where a config key's relative paths point).
    """

    def __init__(self, runtime: Runtime, session: Session, run_id: str, user_input: str) -> None:
        self._runtime = runtime
        self._session = session
        self.run_id = run_id
        self.input = user_input
        self.step = 0
        self.state = StateStore(runtime.registry, Scope.RUN)
        self.hidden: frozenset[str] = frozenset()
        self.usage_total = Usage()
        self._visible: tuple[int, frozenset[str], list[ToolDescriptor]] | None = None

    # ---------------------------------------------------------------- identity and state
    @property
    def session_id(self) -> str:
        return self._session.id

    @property
    def agent(self) -> AgentConfig:
        return self._runtime.agent

    @property
    def session_state(self) -> StateStore:
        return self._session.state

    @property
    def profile_state(self) -> StateStore:
        return self._runtime.profile_state

    @property
    def usage(self) -> ToolUsage:
        return self.state[ToolUsage]

    @property
    def priors(self) -> ToolPriors:
        return self.profile_state[ToolPriors]

    # ---------------------------------------------------------------- tools and groups
    @property
    def tools(self) -> ToolSet:
        """Every tool loaded so far, plugin tools included (read it; do not add to it)."""
        return self._runtime.tools

    def visible_descriptors(self) -> list[ToolDescriptor]:
        """Every tool this agent may use in this run (hidden tools removed); a fresh list,
        rebuilt only when the tool set or the hidden set changed."""
        tools = self._runtime.tools
        cached = self._visible
        if cached is None or cached[0] != tools.version or cached[1] is not self.hidden:
            visible = [d for d in tools.descriptors() if d.name not in self.hidden]
            cached = self._visible = (tools.version, self.hidden, visible)
        return list(cached[2])

    @property
    def groups(self) -> Mapping[str, ToolGroup]:
        """The runtime's tool groups by id (loaded or not)."""
        return MappingProxyType(self._runtime.groups)

    def group_of(self, tool_name: str) -> ToolGroup | None:
        """The group that declares ``tool_name`` (before or after loading)."""
        return self._runtime.group_of(tool_name)

    async def load_group(self, group_id: str) -> list[Tool]:
        """Load a group once (later calls return its tools) and make its tools callable;
        a failed load raises and can be retried."""
        return await self._runtime.load_group(group_id, self.step)

    # ---------------------------------------------------------------- the model
    @property
    def model_name(self) -> str:
        """How the model presents itself (for messages, not for decisions)."""
        return repr(self._runtime.model)

    @property
    def hosted_tool_search(self) -> bool:
        """Whether the model searches ``ModelRequest.deferred`` tools on its side."""
        return supports_native_tool_search(self._runtime.model)

    # ---------------------------------------------------------------- doing things
    def emit(self, event: ev.Event) -> None:
        self._runtime.events.emit(event)

    async def search(
        self, query: SearchQuery, candidates: Sequence[ToolDescriptor]
    ) -> tuple[list[ScoredTool], list[Ranking]]:
        """Rank candidates through the search hooks (keyword fallback when no ranker)."""
        return await self._runtime.search(query, candidates, self)

    def call_hook(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call a contribution hook (every implementation, in pluggy's order) and return
        the non-None answers; a plugin calls the hooks it declared this way."""
        return [r for r in self._runtime.host.call_sync(hook_name, **kwargs) if r is not None]

    def on_close(self, closer: Callable[[], Any]) -> None:
        """Run ``closer`` (sync or async) when the runtime closes."""
        self._runtime.on_close(closer)

    def config_dir(self, key: str) -> Path | None:
        """The folder relative paths at the dotted config ``key`` resolve against (that of
        the file that set it); None for a runtime built in Python, not from a file."""
        cfg = self._runtime.config
        return None if cfg is None else cfg.dir_of(key)
