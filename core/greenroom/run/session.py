"""Sessions: one conversation's messages and state, saved to and resumed from files.

A session file is JSON in the ``greenroom.session/1`` format, written atomically and
readable by its owner only. Reading one checks everything before anything is used: a
file that is not UTF-8, not JSON, not a session, or has a field of the wrong type is a
``SessionError`` naming the file and the dotted path of what is wrong, and the file is
left as it was. A session belongs to an agent id; another agent's session is refused
(``SessionOwnerError``) unless it is taken over on purpose.

``held_session`` is a session file as a run uses it: held against every other process
from load to save (``greenroom._support.storage.FileHold``), created when missing, saved on the
way out whatever ended the run.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from greenroom.models import Message
from greenroom.state import (
    Scope,
    Snapshot,
    StateRegistry,
    StateStore,
)

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

    from greenroom._support.storage import FileInUse
    from greenroom.config import AgentConfig, RuntimeConfig
    from greenroom.models import TextListener
    from greenroom.plugins.host import PluginHost
    from greenroom.run.context import RunContext, RunOutcome

log = logging.getLogger("greenroom")

FORMAT = "greenroom.session/1"
_MAX_PROBLEM = 300  # a problem quotes the value it is about: a huge one must not flood the terminal


class SessionError(ValueError):
    """A session file that cannot be used: the message names the file and what is wrong."""


class SessionOwnerError(SessionError):
    """The session file belongs to another agent id (``owner``) than the runtime's (``agent``)."""

    def __init__(self, path: str, owner: str, agent: str) -> None:
        self.path = path
        self.owner = owner
        self.agent = agent
        super().__init__(f"{path}: this session belongs to agent {owner!r}, not to this runtime's agent {agent!r}")


class SessionOwner(Protocol):
    """What a session reads of the runtime it belongs to (``greenroom.Runtime``)."""

    @property
    def agent(self) -> AgentConfig: ...

    @property
    def registry(self) -> StateRegistry: ...

    @property
    def profile_state(self) -> StateStore: ...

    @property
    def host(self) -> PluginHost: ...

    async def run(self, session: Session, user_input: str, *, on_text: TextListener | None = None) -> RunOutcome: ...

    def session(self, session_id: str | None = None) -> Session: ...


class Session:
    """One conversation: its messages and session-scoped state."""

    def __init__(self, runtime: SessionOwner, session_id: str | None = None) -> None:
        self.runtime = runtime
        self.id = session_id or uuid.uuid4().hex[:12]
        self.messages: list[Message] = []
        self.state = StateStore(runtime.registry, Scope.SESSION)
        self.unknown_state: dict[str, Any] = {}
        self.runs = 0
        self.last_snapshot: Snapshot | None = None
        self.stable_sections: dict[str, str] = {}  # what each stable section said last (not saved)
        self.stable_streaks: dict[str, int] = {}  # steps in a row each changed (-1: reported)
        self.file: Path | None = None
        """The file it was resumed from, is held at (``held_session``: saved there when the
        hold ends) or was saved to last; None until it has one (``RunContext.session_file``)."""

    async def run(self, user_input: str, *, on_text: TextListener | None = None) -> RunOutcome:
        """``Runtime.run`` on this session; ``on_text`` hears the model's text as it
        arrives (when the model streams)."""
        return await self.runtime.run(self, user_input, on_text=on_text)

    def snapshot(self, run_ctx: RunContext | None = None) -> Snapshot:
        values: dict[type, Any] = {}
        profile = run_ctx.profile_state if run_ctx is not None else self.runtime.profile_state
        values.update(dict(profile.items()))
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
            "format": FORMAT,
            "id": self.id,
            "agent": self.runtime.agent.id,
            "runs": self.runs,
            "messages": converter.unstructure(self.messages),
            "state": state,
        }

    def save(self, path: str | Path) -> Path:
        """Write the session atomically (a crash mid-save keeps the previous file), 0600;
        a ``path`` that is a symbolic link is written through (the link stays a link). Then
        ``greenroom_session_saved`` tells the plugins; one that fails is logged, and the
        session stays saved."""
        from greenroom._support.storage import write_json_atomic
        from greenroom.plugins.host import PluginLoadError

        saved = write_json_atomic(Path(path), self.to_json())
        self.file = saved
        failures: list[Exception] = []
        try:
            failures.extend(self.runtime.host.call_each_sync("greenroom_session_saved", session=self, path=saved)[1])
        except PluginLoadError as exc:  # an async implementation, which this call cannot await
            failures.append(exc)
        for failure in failures:
            log.warning("session %s was saved to %s, but %s", self.id, saved, failure)
        return saved

    @classmethod
    def load(cls, runtime: SessionOwner, path: str | Path, *, take_over: bool = False) -> Session:
        """Resume the session saved at ``path``; ``take_over`` accepts another agent's
        session (it is saved as this runtime's agent from then on)."""
        p = Path(path)
        session = cls.from_json(runtime, read_session_file(p), str(p), take_over=take_over)
        session.file = p
        return session

    @classmethod
    def from_json(
        cls, runtime: SessionOwner, data: Any, source: str = "<session>", *, take_over: bool = False
    ) -> Session:
        from greenroom.config import converter

        check_session_data(data, source)
        owner, agent = data["agent"], runtime.agent.id
        if owner != agent and not take_over:
            raise SessionOwnerError(source, owner, agent)
        s = cls(runtime, data.get("id") or None)
        s.runs = data.get("runs", 0)
        try:
            s.messages = converter.structure(data["messages"], list[Message])
        except Exception as exc:  # the schema checked the shape; this is a value attrs refused
            raise SessionError(f"{source}: messages: {_problems(exc, 'messages')}") from None
        known = runtime.registry.by_id()
        for key_id, raw in data.get("state", {}).items():
            key = known.get(key_id)
            if key is None or key.scope is not Scope.SESSION:
                # a plugin that is not installed now: keep its state so nothing is lost
                s.unknown_state[key_id] = raw
                continue
            where = f"state.{key_id}"
            try:
                s.state.set(converter.structure(key.upgrade(raw) if key.upgrade else raw, key.cls))
            except Exception as exc:
                raise SessionError(f"{source}: {_problems(exc, where)}") from None
        return s


def read_session_file(path: Path) -> Mapping[str, Any]:
    """The JSON object in ``path``, or a ``SessionError`` saying why there is none (a
    named pipe or a device is refused before it is read: it could wait or never end)."""
    from greenroom._support.storage import read_regular_file

    try:
        raw = read_regular_file(path)
    except FileNotFoundError:
        raise SessionError(f"{path}: no such session file") from None
    except OSError as exc:
        raise SessionError(f"{path}: cannot read the session file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SessionError(
            f"{path}: not a greenroom session file: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise SessionError(f"{path}: not valid JSON: nested too deeply") from None
    except ValueError as exc:  # a number past Python's digit limit
        raise SessionError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SessionError(f"{path}: not a greenroom session file: expected a JSON object, got {_json_type(data)}")
    return data


def check_session_data(data: Any, source: str) -> None:
    """Raise a ``SessionError`` naming the first thing in ``data`` that is not a session."""
    if not isinstance(data, Mapping):
        raise SessionError(f"{source}: not a greenroom session file: expected a JSON object, got {_json_type(data)}")
    if data.get("format") != FORMAT:
        found = _clip(repr(data.get("format")))
        raise SessionError(f"{source}: not a greenroom session file (format {found}, expected {FORMAT!r})")
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(data))
    if error is not None:
        where = _dotted(error.absolute_path)
        raise SessionError(f"{source}: {where + ': ' if where else ''}{_clip(error.message)}")


@functools.cache
def _validator() -> Validator:
    import jsonschema

    from greenroom.tools.schema.from_types import schema_for_attrs

    schema = {
        "type": "object",
        "properties": {
            "format": {"const": FORMAT},
            "id": {"type": "string"},
            "agent": {"type": "string"},
            "runs": {"type": "integer", "minimum": 0},
            "messages": {"type": "array", "items": schema_for_attrs(Message)},
            "state": {"type": "object"},
        },
        "required": ["format", "agent", "messages"],
        # a key this version does not know would be dropped on the next save
        "additionalProperties": False,
    }
    validator: Validator = jsonschema.Draft202012Validator(schema)
    return validator


def session_path(name: str | Path, config: RuntimeConfig | None) -> Path:
    """Where ``--session NAME`` points: a bare file name (no folder in it, not even
    ``./``, so pass the text as typed) lives in ``[session] dir`` when the config sets
    one (a relative ``dir`` is relative to the config file that set it); any other path
    is used as given."""
    text = os.fspath(name)
    p = Path(text).expanduser()
    folder = config.session.dir if config is not None else None
    separators = [sep for sep in (os.sep, os.altsep) if sep]
    if folder is None or any(sep in text for sep in separators) or p.is_absolute():
        return p
    base = Path(folder).expanduser()
    if not base.is_absolute():
        assert config is not None
        base = config.dir_of("session.dir") / base
    return base / p


@contextmanager
def held_session(
    runtime: SessionOwner,
    path: str | Path,
    *,
    wait: float = 0.0,
    take_over: bool = False,
    on_wait: Callable[[FileInUse], None] | None = None,
) -> Iterator[Session]:
    """The session at ``path`` (a new one when there is no file), held against every other
    process until the block ends and saved then, whatever ended it.

    A file another process holds raises ``greenroom._support.storage.FileInUse`` after ``wait``
    seconds (``on_wait`` is told before waiting); a file that cannot be resumed raises
    ``SessionError`` and is not touched. Waiting blocks the calling thread.
    """
    from greenroom._support.storage import FileHold, NotARegularFile, check_writable_file

    p = Path(path)
    try:
        check_writable_file(p)  # before a lock file is made beside a device
    except NotARegularFile as exc:
        raise SessionError(f"{p}: cannot use it as a session file: {exc.strerror}") from None
    try:
        hold = FileHold(p, wait).acquire(on_wait)
    except OSError as exc:  # a folder that cannot be made, a lock file that cannot be written
        where = f" ({exc.filename})" if exc.filename else ""
        raise SessionError(f"{p}: cannot hold the session file: {exc.strerror or exc}{where}") from None
    try:
        session = Session.load(runtime, p, take_over=take_over) if p.exists() else runtime.session()
        session.file = p  # saved there at the end: what it keeps meanwhile outlives the runtime
        try:
            yield session
        finally:
            session.save(p)
    finally:
        hold.release()


def _problems(exc: Exception, where: str) -> str:
    import cattrs

    if isinstance(exc, cattrs.BaseValidationError):
        found = cattrs.transform_error(exc, path=where)
        # "what @ path" -> "path: what", the way every other greenroom error reads
        lines = []
        for line in found[:3]:
            what, at, where_ = line.rpartition(" @ ")
            lines.append(f"{where_}: {what}" if at else line)
        return _clip("; ".join(lines))
    return _clip(f"{where}: {type(exc).__name__}: {exc}")


def _dotted(path: Any) -> str:
    from greenroom.config.model import dotted

    return dotted(list(path))


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_PROBLEM else text[: _MAX_PROBLEM - 3] + "..."
