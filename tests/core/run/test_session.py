"""Session files as the API reads and writes them: every broken file is a ``SessionError``
naming the file and what is wrong, and stays byte for byte as it was; another agent's
session is refused unless taken over; a held file is refused to everyone else; a bare
``--session`` name lives in ``[session] dir``; sessions, traces and locks are 0600."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenroom import events as ev
from greenroom._support.storage import FileHold, FileInUse, lock_path, write_json_atomic
from greenroom.config import load_config
from greenroom.plugins.discovery import Plugin, hookimpl
from greenroom.run.session import (
    FORMAT,
    Session,
    SessionError,
    SessionOwnerError,
    check_session_data,
    held_session,
    session_path,
)
from greenroom.state import Scope, StateRegistry


@attrs.define
class Notes:
    count: int = 0
    seen: list[str] = attrs.Factory(list)


NOTES = f"{Notes.__module__}.{Notes.__qualname__}"  # its key in a session file's state


class NotesPlugin(Plugin):
    """Keeps session state, so a session file has a state section to break."""

    name = "notes"

    @hookimpl
    def greenroom_register_state(self, registry: StateRegistry) -> None:
        registry.register(Notes, Scope.SESSION, owner=self.name)

    @hookimpl
    def greenroom_run_start(self, ctx: Any) -> None:
        notes = ctx.session_state[Notes]
        notes.count += 1
        notes.seen.append(ctx.input)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
async def saved(make_runtime, tmp_path: Path) -> dict[str, Any]:
    """A real session with a tool call, a tool result and plugin state, as its JSON."""
    from greenroom import tool

    @tool
    def echo(text: str) -> str:
        """Echo.

        Args:
            text: What to say.
        """
        return text

    rt = make_runtime(
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}, {"text": "done"}],
        tools=[echo],
        plugins=[NotesPlugin()],
    )
    session = rt.session("s1")
    await session.run("first")
    return session.to_json()


def runtime_for(make_runtime, agent_id: str = "agent") -> Any:
    return make_runtime([{"text": "ok"}], plugins=[NotesPlugin()], id=agent_id)


def broken(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    target: Any = out
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return out


# (what the file holds, what the error must say)
BROKEN_FILES: list[tuple[str, Any, str]] = [
    ("truncated", lambda doc: json.dumps(doc, indent=1).encode()[:-25], "not valid JSON: Expecting"),
    ("empty", lambda doc: b"", "not valid JSON: Expecting value (line 1, column 1)"),
    ("not UTF-8", lambda doc: b"\xff\xfe" + json.dumps(doc).encode(), "not UTF-8 text (byte 0xff at offset 0)"),
    ("latin-1 inside", lambda doc: json.dumps(doc).encode().replace(b"first", b"f\xe9rst"), "(byte 0xe9 at offset"),
    ("an array", lambda doc: b"[1, 2]", "expected a JSON object, got an array"),
    ("nested too deeply", lambda doc: b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("other format", lambda doc: json.dumps({**doc, "format": "greenroom.session/9"}).encode(), "format 'greenroom."),
    ("no format", lambda doc: json.dumps({"messages": []}).encode(), "not a greenroom session file (format None"),
    ("runs a string", lambda doc: json.dumps(broken(doc, ("runs",), "3")).encode(), "runs: '3' is not of type"),
    ("runs negative", lambda doc: json.dumps(broken(doc, ("runs",), -1)).encode(), "runs: -1 is less than"),
    ("agent a number", lambda doc: json.dumps(broken(doc, ("agent",), 7)).encode(), "agent: 7 is not of type 'string'"),
    (
        "a role that is none",
        lambda doc: json.dumps(broken(doc, ("messages", 1, "role"), "robot")).encode(),
        "messages[1].role: 'robot' is not one of",
    ),
    (
        "content a number",
        lambda doc: json.dumps(broken(doc, ("messages", 0, "content"), 5)).encode(),
        "messages[0].content: 5 is not of type 'string'",
    ),
    (
        "arguments a list",
        lambda doc: json.dumps(broken(doc, ("messages", 1, "tool_calls", 0, "arguments"), [1])).encode(),
        "messages[1].tool_calls[0].arguments: [1] is not of type 'object', 'null'",
    ),
    (
        "messages an object",
        lambda doc: json.dumps(broken(doc, ("messages",), {"a": 1})).encode(),
        "messages: {'a': 1} is not of type 'array'",
    ),
    (
        "state of a plugin, wrong type",
        lambda doc: json.dumps(broken(doc, ("state", NOTES, "count"), "many")).encode(),
        f"state.{NOTES}.count: invalid value for type, expected int",
    ),
    (
        "an unknown key",
        lambda doc: json.dumps({**doc, "extra": 1}).encode(),
        "Additional properties are not allowed ('extra' was unexpected)",
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("case", "content", "says"), BROKEN_FILES, ids=[c[0] for c in BROKEN_FILES])
async def test_a_broken_session_file_is_named_with_what_is_wrong_and_left_untouched(
    make_runtime, saved, tmp_path: Path, case: str, content: Any, says: str
) -> None:
    assert NOTES in saved["state"]  # the fixture has plugin state to break
    path = tmp_path / "broken.json"
    raw = content(saved)
    path.write_bytes(raw)
    rt = runtime_for(make_runtime)
    with pytest.raises(SessionError) as caught:
        rt.load_session(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message
    assert says in message, message
    assert len(message) < 600  # a huge wrong value is quoted, not pasted whole
    # held for a run: refused before the run, and never saved over
    with pytest.raises(SessionError), held_session(rt, path):
        pytest.fail("a broken session must not reach the run")
    assert path.read_bytes() == raw


def test_a_huge_wrong_value_is_clipped_in_the_message(tmp_path: Path, make_runtime) -> None:
    doc = {"format": FORMAT, "agent": "agent", "messages": [{"role": "user", "content": ["x" * 100_000]}]}
    with pytest.raises(SessionError) as caught:
        Session.from_json(runtime_for(make_runtime), doc, "big.json")
    assert str(caught.value).startswith("big.json: messages[0].content: ['xxxx")
    assert len(str(caught.value)) <= 400


@pytest.mark.anyio
async def test_another_agents_session_is_refused_unless_taken_over(make_runtime, saved, tmp_path: Path) -> None:
    path = write_json_atomic(tmp_path / "theirs.json", saved)  # saved by agent "agent"
    before = path.read_bytes()
    other = runtime_for(make_runtime, "support-bot")
    with pytest.raises(SessionOwnerError) as caught:
        other.load_session(path)
    assert (caught.value.owner, caught.value.agent, caught.value.path) == ("agent", "support-bot", str(path))
    assert str(caught.value) == (
        f"{path}: this session belongs to agent 'agent', not to this runtime's agent 'support-bot'"
    )
    with pytest.raises(SessionOwnerError), held_session(other, path):
        pytest.fail("another agent's session must not reach the run")
    assert path.read_bytes() == before

    with held_session(other, path, take_over=True) as taken:
        assert taken.messages[0].content == "first"
        await taken.run("second")
    after = json.loads(path.read_text())
    assert after["agent"] == "support-bot" and after["runs"] == 2
    assert after["state"][NOTES] == {"count": 2, "seen": ["first", "second"]}
    assert other.load_session(path).runs == 2  # it is this agent's now


@pytest.mark.anyio
async def test_held_session_is_created_saved_whatever_ends_the_block_and_0600(make_runtime, tmp_path: Path) -> None:
    rt = runtime_for(make_runtime)
    path = tmp_path / "deep" / "s.json"
    with pytest.raises(RuntimeError, match="boom"), held_session(rt, path) as session:
        await session.run("kept")
        raise RuntimeError("boom")
    doc = json.loads(path.read_text())
    assert doc["runs"] == 1 and doc["messages"][0]["content"] == "kept"
    assert mode(path) == 0o600
    assert mode(lock_path(path)) == 0o600


def test_a_held_file_is_refused_to_another_holder_naming_the_pid(make_runtime, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    with FileHold(path):
        assert lock_path(path).read_text().strip() == str(os.getpid())
        heard: list[FileInUse] = []
        with pytest.raises(FileInUse) as caught, held_session(runtime_for(make_runtime), path, on_wait=heard.append):
            pytest.fail("the file is held")
        assert (caught.value.path, caught.value.pid) == (path, os.getpid())
        assert str(caught.value) == f"{path} is in use (pid {os.getpid()})"
        assert heard == []  # no wait was asked for, so nobody was told of one
    assert not path.exists()  # the refused run saved nothing
    with held_session(runtime_for(make_runtime), path):
        pass  # released: the next run gets it
    assert path.exists()


def test_a_session_path_that_cannot_be_held_is_a_session_error(make_runtime, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    path = tmp_path / "a-file" / "s.json"
    with pytest.raises(SessionError, match=r"a-file/s\.json: cannot hold the session file: File exists \(.*a-file\)"):
        with held_session(runtime_for(make_runtime), path):
            pytest.fail("nowhere to keep the session")


def test_a_release_without_a_hold_is_harmless(tmp_path: Path) -> None:
    hold = FileHold(tmp_path / "s.json")
    hold.release()
    with hold:
        pass
    hold.release()


def test_traces_are_created_0600_and_an_existing_trace_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = ev.TraceWriter(path)
    writer(ev.RunStarted(run_id="r"))
    writer.close()
    assert mode(path) == 0o600
    path.chmod(0o640)  # the user's choice for a file that exists
    writer = ev.TraceWriter(path)
    writer(ev.RunStarted(run_id="r2"))
    writer.close()
    assert mode(path) == 0o640
    assert [json.loads(line)["run_id"] for line in path.read_text().splitlines()] == ["r", "r2"]


def test_a_bare_session_name_lives_in_the_session_dir_of_the_file_that_set_it(tmp_path: Path) -> None:
    base_dir, child_dir = tmp_path / "base", tmp_path / "child"
    base_dir.mkdir()
    child_dir.mkdir()
    (base_dir / "base.toml").write_text('[session]\ndir = "sessions"\n')
    (child_dir / "agent.toml").write_text('extends = "../base/base.toml"\n[agent]\nid = "a"\n')
    cfg = load_config(child_dir / "agent.toml")
    assert session_path("s.json", cfg) == base_dir / "sessions" / "s.json"
    assert session_path(Path("s.json"), cfg) == base_dir / "sessions" / "s.json"
    # a path with a folder in it, or an absolute one, is used as given
    assert session_path("sub/s.json", cfg) == Path("sub/s.json")
    assert session_path("./s.json", cfg) == Path("s.json")
    assert session_path("~/s.json", cfg) == Path.home() / "s.json"
    assert session_path(tmp_path / "x.json", cfg) == tmp_path / "x.json"
    # no [session] dir: every name is relative to the current directory, as before
    (child_dir / "plain.toml").write_text('[agent]\nid = "a"\n')
    assert session_path("s.json", load_config(child_dir / "plain.toml")) == Path("s.json")
    assert session_path("s.json", None) == Path("s.json")
    (child_dir / "abs.toml").write_text(f'[session]\ndir = "{tmp_path / "abs"}"\n')
    assert session_path("s.json", load_config(child_dir / "abs.toml")) == tmp_path / "abs" / "s.json"


def json_values() -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner))


def paths_in(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += paths_in(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += paths_in(item, (*prefix, i))
    return out


@pytest.mark.anyio
async def test_any_hand_edit_of_a_session_loads_or_is_a_session_error(make_runtime, saved) -> None:
    rt = runtime_for(make_runtime)
    places = paths_in(saved)

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(where=st.sampled_from(places), value=json_values(), delete=st.booleans())
    def edit(where: tuple[Any, ...], value: Any, delete: bool) -> None:
        doc = copy.deepcopy(saved)
        target: Any = doc
        for part in where[:-1]:
            target = target[part]
        if delete and isinstance(target, dict):
            del target[where[-1]]
        else:
            target[where[-1]] = value
        try:
            session = Session.from_json(rt, doc, "edited.json")
        except SessionError as exc:
            assert str(exc).startswith("edited.json: ")
            return
        check_session_data(session.to_json(), "resaved")  # what loads saves as a valid session

    edit()
