"""Results that fit, and nothing thrown away: a result over ``max_result_tokens`` is kept
whole in the state folder and the model reads the rest with ``read_result`` (the plugin
``read-result``), by lines or by pattern, bounded in output and in time; the state folder
stays bounded; kept results go with their session and come back with it, however it is
saved."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from greenroom import Plugin, RunContext, hookimpl, tool
from greenroom import events as ev
from greenroom.run.policy import ToolPolicy
from greenroom.run.session import Session, held_session
from greenroom.tokens.counting import count_tokens
from greenroom_results import ReadResultConfig, ReadResultPlugin, ResultKept, read_result
from greenroom_results import kept as kept_mod
from greenroom_results.reading import LINE_CHARS, PATTERN_SECONDS, line_starts

pytestmark = pytest.mark.anyio

OUTPUT = [""]


@tool
def fetch_logs() -> str:
    """The service's logs."""
    return OUTPUT[0]


def log_lines(n: int, errors_every: int = 10_007) -> str:
    """``n`` lines of about 40 characters; line k (from 1) says ERROR when k is a multiple of ``errors_every``."""
    return "\n".join(
        f"{k:07d} {'ERROR upstream reset' if k % errors_every == 0 else 'INFO request handled in 12 ms'}"
        for k in range(1, n + 1)
    )


def call(name: str, id_: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": id_, "name": name, "arguments": arguments}]}


def results_of(rt: Any) -> list[Any]:
    return [m for m in rt.model.requests[-1].messages if m.role == "tool"]


def kept_files() -> list[Path]:
    return sorted(kept_mod.root().glob(f"*/*{kept_mod.SUFFIX}"))


def runtime(make_runtime: Any, turns: list[Any], *, kept: ReadResultConfig | None = None, **agent: Any) -> Any:
    return make_runtime(turns, tools=[fetch_logs], plugins=[ReadResultPlugin(kept)], **agent)


async def test_a_result_of_several_megabytes_is_kept_and_read_back_by_pattern(make_runtime: Any) -> None:
    OUTPUT[0] = log_lines(150_000)  # 5.7 MB
    turns = [call("fetch_logs", "c1"), call("read_result", "c2", call_id="c1", pattern=r"ERROR \w+"), {"text": "ok"}]
    rt = runtime(make_runtime, turns)
    events: list[ev.Event] = []
    rt.events.subscribe(events.append)
    session = rt.session()
    assert (await session.run("why?")).stop_reason == "final"
    cut, read = results_of(rt)
    # the model got the head, the tail and the line saying how to read the rest
    note = cut.content.split("\n", 1)[0]
    assert count_tokens(cut.content) <= 25_000
    assert "greenroom kept the whole result (150,000 lines; lines " in note
    assert 'call read_result with call_id "c1"' in note and "narrower arguments" not in note
    (cut_event,) = [e for e in events if isinstance(e, ev.ResultCut)]
    (kept_event,) = [e for e in events if isinstance(e, ResultKept)]
    assert (kept_event.call_id, kept_event.tool, kept_event.chars) == ("c1", "fetch_logs", cut_event.original_chars)
    # the pattern finds the lines deep in the middle the cut left out, numbered, with context
    assert not read.is_error and count_tokens(read.content) <= 25_000
    matched = re.findall(r"^(\d+):(\d{7} .*)$", read.content, re.M)
    assert [int(n) for n, _ in matched] == [k for k in range(10_007, 150_001, 10_007)]
    assert all(text == f"{int(n):07d} ERROR upstream reset" for n, text in matched)
    assert f"{70_048 - 1}-{70_048 - 1:07d} INFO" in read.content  # a line of context before one
    # one file, in a folder of this session's
    (path,) = kept_files()
    assert path.parent == kept_mod.folder_of(session.id) and oct(path.stat().st_mode & 0o777) == "0o600"
    await rt.aclose()


async def test_offsets_read_lines_by_number_and_say_where_to_go_on(make_runtime: Any) -> None:
    OUTPUT[0] = log_lines(20_000)
    turns = [
        call("fetch_logs", "c1"),
        call("read_result", "c2", call_id="c1", offset=12_345, limit=3),
        call("read_result", "c3", call_id="c1", offset=19_999),
        call("read_result", "c4", call_id="c1", offset=20_001),
        {"text": "ok"},
    ]
    rt = runtime(make_runtime, turns, max_result_tokens=2_000)
    await rt.session().run("go")
    _, three, last, past = results_of(rt)
    assert three.content.splitlines() == [
        "[the result of call c1 (fetch_logs, 20,000 lines): lines 12,345-12,347]",
        "12345:0012345 INFO request handled in 12 ms",
        "12346:0012346 INFO request handled in 12 ms",
        "12347:0012347 INFO request handled in 12 ms",
        "[next: offset=12348]",
    ]
    assert last.content.splitlines()[1:] == [
        "19999:0019999 INFO request handled in 12 ms",
        "20000:0020000 INFO request handled in 12 ms",
        "[end of the result]",
    ]
    assert past.is_error and "offset 20,001 is outside the result: it has 20,000 lines" in past.content
    await rt.aclose()


async def test_reading_on_from_each_next_offset_gives_back_the_whole_result(make_runtime: Any) -> None:
    """Nothing is thrown away: a one-line JSON document reads in pieces of LINE_CHARS, and
    following ``next`` from line 1 to the end joins them to the very text that was cut."""
    OUTPUT[0] = json.dumps([{"id": k, "name": f"item {k}", "tags": ["a", "b"]} for k in range(4_000)])
    rt = runtime(make_runtime, [call("fetch_logs", "c1"), {"text": "ok"}], max_result_tokens=1_000)
    session = rt.session()
    await session.run("go")
    ctx = rt.start_run(session).ctx
    pieces, offset = [], 1
    while True:
        read = await read_result(ctx, "c1", offset=offset)
        lines = read.content.splitlines()
        pieces += [line.split(":", 1)[1] for line in lines[1:-1]]
        if lines[-1] == "[end of the result]":
            break
        offset = int(lines[-1].removeprefix("[next: offset=").rstrip("]"))
    assert "".join(pieces) == json.dumps(json.loads(OUTPUT[0]), separators=(",", ":"))  # compacted, whole
    assert max(len(p) for p in pieces) == LINE_CHARS
    await rt.aclose()


async def test_a_hostile_pattern_is_stopped_in_time_and_the_loop_runs_meanwhile(make_runtime: Any) -> None:
    OUTPUT[0] = "\n".join(["x" * 5_000 + "!"] * 200)
    rt = runtime(make_runtime, [call("fetch_logs", "c1"), {"text": "ok"}], max_result_tokens=1_000)
    session = rt.session()
    await session.run("go")
    ctx = rt.start_run(session).ctx
    gaps: list[float] = []
    done = anyio.Event()

    async def read() -> None:
        result = await read_result(ctx, "c1", pattern=r"(x+x+)+y")
        done.set()
        assert result.is_error and f"ran for more than {PATTERN_SECONDS:g} s" in result.content

    async def loop_alive() -> None:
        last = time.monotonic()
        while not done.is_set():  # the event loop turns while the pattern runs: its GIL is released
            await anyio.sleep(0.005)
            gaps.append(time.monotonic() - last)
            last = time.monotonic()

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        tg.start_soon(loop_alive)
    assert time.monotonic() - started < PATTERN_SECONDS + 10  # stopped, not run to its end (hours)
    assert len(gaps) > 10 and max(gaps) < PATTERN_SECONDS / 2
    # what the compiler would expand past any bound is refused before it compiles
    refused = await read_result(ctx, "c1", pattern=r"((a{1000}){1000}){1000}")
    assert refused.is_error and "ask for 1,000,000,000 repetitions" in refused.content
    bad = await read_result(ctx, "c1", pattern="(unclosed")
    assert bad.is_error and "pattern '(unclosed' cannot be used: missing )" in bad.content
    await rt.aclose()


class HideLogs(Plugin):
    """Hides fetch_logs from every run once ``hide`` is set (a policy that changed)."""

    name = "hide-logs"
    hide = False

    @hookimpl
    def greenroom_hidden_tools(self, ctx: RunContext, tools: Any) -> list[str]:
        return ["fetch_logs"] if self.hide else []


async def test_another_sessions_call_and_a_hidden_tools_result_are_not_readable(make_runtime: Any) -> None:
    OUTPUT[0] = log_lines(5_000)
    hider = HideLogs()
    rt = make_runtime(
        [call("fetch_logs", "c1"), {"text": "ok"}, call("read_result", "c2", call_id="c1"), {"text": "ok"}],
        tools=[fetch_logs],
        plugins=[ReadResultPlugin(), hider],
        max_result_tokens=1_000,
    )
    mine = rt.session()
    await mine.run("go")
    other = rt.session()
    await other.run("read what the first session kept")
    (theirs,) = results_of(rt)
    assert theirs.is_error and "no kept result for call_id 'c1' in this session" in theirs.content
    ctx = rt.start_run(mine).ctx
    assert not (await read_result(ctx, "c1")).is_error
    hider.hide = True
    run = rt.start_run(mine)
    await run.start()
    hidden = await read_result(run.ctx, "c1")
    assert (
        hidden.is_error and "no kept result for call_id 'c1'" in hidden.content and "fetch_logs" not in hidden.content
    )
    await rt.aclose()


async def test_the_state_folder_stays_bounded(make_runtime: Any) -> None:
    OUTPUT[0] = log_lines(30_000)  # 1.1 MB
    small = ReadResultConfig(max_kept_bytes=500_000)
    rt = runtime(make_runtime, [call("fetch_logs", "c1"), {"text": "ok"}], kept=small, max_result_tokens=1_000)
    await rt.session().run("go")
    (cut,) = results_of(rt)
    note = cut.content.split("\n", 1)[0]
    assert "greenroom did not keep it whole (it is over 500,000 bytes, the most one result may keep)" in note
    assert "narrower arguments" in note and "read_result" not in note
    assert kept_files() == []  # nothing written
    # a session keeps at most max_session_bytes: its oldest results go first
    OUTPUT[0] = log_lines(10_000)  # 380 kB each
    turns = [*(call("fetch_logs", f"k{i}") for i in range(4)), {"text": "ok"}]
    rt = runtime(make_runtime, turns, kept=ReadResultConfig(max_session_bytes=1_000_000), max_result_tokens=1_000)
    session = rt.session()
    await session.run("go")
    assert sum(p.stat().st_size for p in kept_files()) <= 1_000_000 and len(kept_files()) == 2
    ctx = rt.start_run(session).ctx
    assert [(await read_result(ctx, f"k{i}")).is_error for i in range(4)] == [True, True, False, False]
    await rt.aclose()


async def test_kept_results_go_with_a_session_never_saved_and_come_back_with_a_saved_one(
    make_runtime: Any, tmp_path: Path
) -> None:
    OUTPUT[0] = log_lines(5_000)
    turns = [call("fetch_logs", "c1"), {"text": "ok"}]
    rt = runtime(make_runtime, turns, max_result_tokens=1_000)
    await rt.session().run("go")
    assert len(kept_files()) == 1
    await rt.aclose()  # never saved: its results go with the runtime
    assert kept_files() == [] and list(kept_mod.root().iterdir()) == []
    # saved to a file, as `greenroom run --session` does: they outlive the runtime
    rt = runtime(make_runtime, turns, max_result_tokens=1_000)
    path = tmp_path / "s.json"
    with held_session(rt, path) as session:
        await session.run("go")
        await rt.aclose()  # as `greenroom run --session` does: the runtime closes, then the session is saved
    assert len(kept_files()) == 1
    # resumed by another runtime (another process alike), the model reads them again
    rt = runtime(make_runtime, [call("read_result", "c2", call_id="c1", offset=4_999), {"text": "ok"}])
    resumed = Session.load(rt, path)
    await resumed.run("and the end?")
    (read,) = [m for m in results_of(rt) if m.tool_call_id == "c2"]
    assert read.content.splitlines()[1] == "4999:0004999 INFO request handled in 12 ms"
    await rt.aclose()
    assert len(kept_files()) == 1
    # the session file deleted, they go at the next sweep once a day has passed unused
    folder = kept_files()[0].parent
    assert kept_mod.sweep(now=time.time() + kept_mod.UNUSED_SECONDS + 60) == []  # its file is still there
    path.unlink()
    assert kept_mod.sweep(now=time.time() + 60) == []  # used within the day
    assert kept_mod.sweep(now=time.time() + kept_mod.UNUSED_SECONDS + 60) == [folder]
    assert kept_files() == []


async def test_a_session_saved_after_its_run_keeps_them(make_runtime: Any, tmp_path: Path) -> None:
    """As docs/python.md runs a session: run, ``session.save(path)``, close the runtime."""
    OUTPUT[0] = log_lines(5_000)
    rt = runtime(make_runtime, [call("fetch_logs", "c1"), {"text": "ok"}], max_result_tokens=1_000)
    session = rt.session()
    await session.run("go")  # kept while the session had no file yet
    session.save(tmp_path / "later.json")
    await rt.aclose()
    assert len(kept_files()) == 1
    rt = runtime(make_runtime, [])
    ctx = rt.start_run(Session.load(rt, tmp_path / "later.json")).ctx
    assert (await read_result(ctx, "c1", offset=5_000)).content.splitlines()[1].startswith("5000:0005000 INFO")
    await rt.aclose()


async def test_without_a_reader_nothing_is_kept_and_the_note_names_no_tool(make_runtime: Any) -> None:
    OUTPUT[0] = log_lines(5_000)
    turns = [call("fetch_logs", "c1"), {"text": "ok"}]
    plain = make_runtime(turns, tools=[fetch_logs], max_result_tokens=1_000)  # read-result disabled
    await plain.session().run("go")
    # read_result denied by the policy: as absent
    denied = make_runtime(turns, tools=[fetch_logs], plugins=[ReadResultPlugin()], max_result_tokens=1_000)
    denied.scoping.policy = ToolPolicy(deny=("read_result",))
    await denied.session().run("go")
    for rt in (plain, denied):
        (cut,) = results_of(rt)
        note = cut.content.split("\n", 1)[0]
        assert "read_result" not in note and "kept" not in note and "narrower arguments" in note
        assert "read_result" not in {d.name for d in rt.model.requests[-1].tools}
        await rt.aclose()
    assert kept_files() == []


def test_a_config_bounds_it(tmp_path: Path) -> None:
    from greenroom import plugin_config
    from greenroom.compose.build import load_runtime_config
    from greenroom.config import ConfigError

    path = tmp_path / "agent.toml"
    path.write_text("[plugins.read-result]\nmax_kept_bytes = 1000\n")
    cfg, _ = load_runtime_config(path)
    assert plugin_config(ReadResultPlugin, cfg) == ReadResultConfig(max_kept_bytes=1000)
    path.write_text("[plugins.read-result]\nmax_kept_bytes = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_runtime_config(path)
    assert "plugins.read-result.max_kept_bytes" in str(caught.value)


def test_lines_split_where_they_are_long_and_nowhere_else() -> None:
    text = "short\n" + "y" * (2 * LINE_CHARS + 5) + "\n\nend"
    starts = line_starts(text)
    assert starts == [0, 6, 6 + LINE_CHARS, 6 + 2 * LINE_CHARS, 6 + 2 * LINE_CHARS + 6, 6 + 2 * LINE_CHARS + 7]
    assert line_starts("") == [] and line_starts("one") == [0] and line_starts("a\n") == [0]


def test_its_definition_costs_little_on_every_request() -> None:
    """Sent with every request of every agent (never deferred): it says what the tool is for,
    and the cut result's note says how to call it (the first test reads that note)."""
    from greenroom.kit import tool_tokens
    from greenroom_results.plugin import DESCRIPTOR

    assert DESCRIPTOR.deferrable == "never" and tool_tokens(DESCRIPTOR) <= 65
