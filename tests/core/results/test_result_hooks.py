"""The two hooks a plugin keeps results through, as any plugin would implement them:
``greenroom_result_cut`` (after a result is cut: the note's last sentence is the first
answer's) and ``greenroom_session_saved`` (a session written to a file), with
``RunContext.session_file`` saying which file a run's session has."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from greenroom import Plugin, RunContext, Session, ToolCall, Truncation, hookimpl, tool
from greenroom import events as ev
from greenroom.run.limits import ADVICE
from greenroom.run.session import held_session

pytestmark = pytest.mark.anyio

LOG = "\n".join(f"line {k} " + "x" * 40 for k in range(1, 3_001))


@tool
def dump() -> str:
    """A long log."""
    return LOG


TURNS: list[Any] = [{"tool_calls": [{"id": "c1", "name": "dump", "arguments": {}}]}, {"text": "ok"}]


class Archive(Plugin):
    """Keeps each cut result in memory and says how to get it back."""

    name = "archive"

    def __init__(self, answer: Any = None, fail: bool = False) -> None:
        super().__init__()
        self.answer, self.fail = answer, fail
        self.seen: list[tuple[str, str, str, Truncation, Path | None]] = []

    @hookimpl
    def greenroom_result_cut(self, ctx: RunContext, call: ToolCall, text: str, cut: Truncation) -> Any:
        self.seen.append((call.id, call.name, text, cut, ctx.session_file))
        if self.fail:
            raise RuntimeError("the archive is full")
        return self.answer if self.answer is not None else f"ask the archive for {call.id} ({cut.head_chars} shown)."


def note_of(rt: Any) -> str:
    (message,) = [m for m in rt.model.requests[-1].messages if m.role == "tool"]
    return str(message.content).split("\n", 1)[0]


async def test_hook_greenroom_result_cut(make_runtime: Any) -> None:
    """The first answer ends the note, and the plugin sees the whole text and the cut."""
    archive = Archive()
    rt = make_runtime(TURNS, tools=[dump], plugins=[archive], max_result_tokens=1_000)
    await rt.session().run("go")
    ((call_id, name, text, cut, session_file),) = archive.seen
    assert (call_id, name, text, session_file) == ("c1", "dump", LOG, None)
    assert cut.advice == ADVICE and 0 < cut.head_chars < cut.original_chars == len(LOG)
    note = note_of(rt)
    assert note.endswith(f"ask the archive for c1 ({cut.head_chars} shown).]") and ADVICE not in note
    await rt.aclose()


@pytest.mark.parametrize(
    ("archive", "failed"),
    [(Archive(fail=True), "RuntimeError: the archive is full"), (Archive(answer=42), "expected a str or None")],
    ids=["raises", "not-a-str"],
)
async def test_a_failure_leaves_the_plain_note_and_names_the_plugin(
    make_runtime: Any, archive: Archive, failed: str
) -> None:
    rt = make_runtime(TURNS, tools=[dump], plugins=[archive], max_result_tokens=1_000)
    events: list[ev.Event] = []
    rt.events.subscribe(events.append)
    assert (await rt.session().run("go")).stop_reason == "final"
    assert note_of(rt).endswith(f"{ADVICE}]")
    (error,) = [e for e in events if isinstance(e, ev.PluginError)]
    assert (error.plugin, error.hook, error.call_id) == ("archive", "greenroom_result_cut", "c1")
    assert failed in error.message
    await rt.aclose()


async def test_a_sentence_too_long_for_the_note_leaves_the_plain_note(make_runtime: Any) -> None:
    rt = make_runtime(TURNS, tools=[dump], plugins=[Archive(answer="read it back " * 400)], max_result_tokens=1_000)
    await rt.session().run("go")
    (message,) = [m for m in rt.model.requests[-1].messages if m.role == "tool"]
    assert note_of(rt).endswith(f"{ADVICE}]") and len(message.content) < len(LOG)
    await rt.aclose()


class Saved(Plugin):
    """Hears every save."""

    name = "saved"

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.saves: list[tuple[str, Path, bool]] = []

    @hookimpl
    def greenroom_session_saved(self, session: Session, path: Path) -> None:
        self.saves.append((session.id, path, path.exists()))
        if self.fail:
            raise OSError("no room for the pin")


class Failing(Saved):
    name = "failing"


class Awaiting(Plugin):
    """An ``async def`` where the hook is called without a loop to await it on."""

    name = "awaiting"

    @hookimpl
    async def greenroom_session_saved(self, session: Session, path: Path) -> None:
        raise AssertionError("never awaited")


async def test_hook_greenroom_session_saved(
    make_runtime: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Told after the file is written, a failure only logged; the run knows its session's file."""
    saved, failing, archive = Saved(), Failing(fail=True), Archive()
    rt = make_runtime(TURNS, tools=[dump], plugins=[saved, failing, archive], max_result_tokens=1_000)
    session = rt.session()
    with caplog.at_level(logging.WARNING, logger="greenroom"):
        path = session.save(tmp_path / "s.json")
    assert saved.saves == failing.saves == [(session.id, path, True)] and session.file == path
    assert "plugin 'failing'" in caplog.text and "no room for the pin" in caplog.text
    awaiting = make_runtime([], plugins=[Awaiting()]).session()
    with caplog.at_level(logging.WARNING, logger="greenroom"):
        assert awaiting.save(tmp_path / "a.json").exists()
    assert "plugin 'awaiting'" in caplog.text and "make it a plain 'def'" in caplog.text
    await session.run("go")  # a session saved before: the run knows its file
    assert archive.seen[0][4] == path
    await rt.aclose()
    # held at a file: the run knows it from the start, before the file is written
    rt = make_runtime(TURNS, tools=[dump], plugins=[archive], max_result_tokens=1_000)
    held = tmp_path / "held.json"
    with held_session(rt, held) as session:
        await session.run("go")
        assert archive.seen[-1][4] == held and not held.exists()
    await rt.aclose()
