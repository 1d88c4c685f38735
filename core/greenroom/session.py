"""Sessions: one conversation's messages and state, saved to and resumed from files."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenroom.models import Message
from greenroom.state import (
    Scope,
    Snapshot,
    StateStore,
)

if TYPE_CHECKING:
    from greenroom.context import RunContext, RunOutcome
    from greenroom.runtime import Runtime


class Session:
    """One conversation: its messages and session-scoped state."""

    def __init__(self, runtime: Runtime, session_id: str | None = None) -> None:
        self.runtime = runtime
        self.id = session_id or uuid.uuid4().hex[:12]
        self.messages: list[Message] = []
        self.state = StateStore(runtime.registry, Scope.SESSION)
        self.unknown_state: dict[str, Any] = {}
        self.runs = 0
        self.last_snapshot: Snapshot | None = None

    async def run(self, user_input: str) -> RunOutcome:
        return await self.runtime.run(self, user_input)

    def snapshot(self, run_ctx: RunContext | None = None) -> Snapshot:
        values: dict[type, Any] = {}
        values.update(dict(self.runtime.profile_state.items()))
        values.update(dict(self.state.items()))
        if run_ctx is not None:
            values.update(dict(run_ctx.state.items()))
        return Snapshot(values)

    def fork(self, session_id: str | None = None) -> Session:
        """A sub-agent session that inherits this one's session state (not its messages)."""
        child = Session(self.runtime, session_id)
        for _cls, value in self.state.items():
            child.state.set(copy.deepcopy(value))
        child.unknown_state = copy.deepcopy(self.unknown_state)
        return child

    # persistence ---------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        from greenroom.config import converter

        state = dict(self.unknown_state)
        for cls, value in self.state.items():
            key = self.runtime.registry.key(cls)
            state[key.id] = converter.unstructure(value)
        return {
            "format": "greenroom.session/1",
            "id": self.id,
            "agent": self.runtime.agent.id,
            "runs": self.runs,
            "messages": converter.unstructure(self.messages),
            "state": state,
        }

    def save(self, path: str | Path) -> Path:
        """Write the session atomically (a crash mid-save keeps the previous file)."""
        from greenroom.storage import write_json_atomic

        return write_json_atomic(Path(path), self.to_json())

    @classmethod
    def from_json(cls, runtime: Runtime, data: Mapping[str, Any], source: str = "<session>") -> Session:
        from greenroom.config import converter

        if data.get("format") != "greenroom.session/1":
            raise SessionError(f"{source}: not a greenroom session file (format {data.get('format')!r})")
        s = cls(runtime, str(data.get("id") or ""))
        s.runs = int(data.get("runs", 0))
        try:
            s.messages = converter.structure(data.get("messages", []), list[Message])
        except Exception as exc:
            raise SessionError(f"{source}: messages: {exc}") from None
        known = runtime.registry.by_id()
        for key_id, raw in (data.get("state") or {}).items():
            key = known.get(key_id)
            if key is None or key.scope is not Scope.SESSION:
                # a plugin that is not installed now: keep its state so nothing is lost
                s.unknown_state[key_id] = raw
                continue
            try:
                s.state.set(converter.structure(key.upgrade(raw) if key.upgrade else raw, key.cls))
            except Exception as exc:
                raise SessionError(f"{source}: state {key_id}: {exc}") from None
        return s


class SessionError(ValueError):
    pass
