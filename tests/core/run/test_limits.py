"""Bounded results and inputs: a tool result over ``max_result_tokens`` reaches the model
cut, with a note; an input over ``max_input_tokens`` ends the run before any model call;
and a run with megabytes of tool output finishes, traced and saved."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from greenroom import Decision, Plugin, ToolResult, hookimpl, tool
from greenroom import events as ev
from greenroom.failures import RunFailure
from greenroom.run.limits import InputTooLongError, Truncation, bound_result, check_input
from greenroom.tokens.counting import count_tokens

LOG_LINES = [
    "2024-05-01T12:00:{:02d}.123Z INFO  worker-{} handled GET /api/v1/items?page={} in {} ms",
    "2024-05-01T12:00:{:02d}.456Z WARN  worker-{} slow query on orders ({} rows, {} ms)",
    "2024-05-01T12:00:{:02d}.789Z ERROR worker-{} upstream reset by peer (attempt {}, {} ms)",
]


def log_text(chars: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    lines: list[str] = []
    size = 0
    while size < chars:
        line = rng.choice(LOG_LINES).format(
            rng.randrange(60), rng.randrange(16), rng.randrange(999), rng.randrange(5000)
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:chars]


class Recorder:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def __call__(self, event: ev.Event) -> None:
        self.events.append(event)

    def of(self, kind: type[ev.Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


# ----------------------------------------------------------------------- cutting a result


def test_a_result_within_the_limit_is_untouched() -> None:
    result = ToolResult("short", structured={"a": 1})
    assert bound_result(result, 100) == (result, None)
    text = log_text(20_000)
    exact = ToolResult(text)
    assert bound_result(exact, count_tokens(text)) == (exact, None)


@pytest.mark.parametrize("limit", [300, 2_000, 25_000])
def test_a_larger_result_keeps_head_and_tail_with_a_note_and_fits_the_limit(limit: int) -> None:
    text = log_text(1_000_000)
    result, cut = bound_result(ToolResult(text, is_error=True, structured={"lines": text.splitlines()}), limit)
    assert isinstance(cut, Truncation)
    assert count_tokens(result.content) <= limit
    assert result.is_error  # an error stays an error
    assert result.structured is None  # the full value would undo the cut
    note, rest = result.content.split("\n", 1)
    assert note == cut.note()
    assert f"{cut.original_chars:,} characters" in note and f"{limit:,} tokens" in note
    assert f"{cut.omitted_chars:,} characters (about {cut.omitted_tokens:,} tokens)" in note
    assert "narrower arguments" in note and "page" in note
    head, tail = rest.split(cut.marker() + "\n")
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) == cut.head_chars and len(tail) == cut.tail_chars
    assert cut.head_chars > cut.tail_chars > 0  # most room to the head, the end kept too
    assert cut.omitted_chars == len(text) - cut.head_chars - cut.tail_chars > 0
    # whole lines: the head ends at a line break and the tail starts a line
    assert head.endswith("\n") and text[len(text) - len(tail) - 1] == "\n"
    # the kept part fills most of the room left after the note
    assert cut.kept_tokens >= (limit - 200) * 0.8


def test_the_estimate_of_left_out_tokens_is_close() -> None:
    text = log_text(400_000)
    _, cut = bound_result(ToolResult(text), 5_000)
    assert cut is not None
    start = cut.head_chars
    real = count_tokens(text[start : len(text) - cut.tail_chars])
    assert abs(cut.omitted_tokens - real) <= real * 0.1


def test_one_long_line_is_cut_inside_it() -> None:
    text = "x" * 300_000  # no line breaks, no blanks
    result, cut = bound_result(ToolResult(text), 1_000)
    assert cut is not None and count_tokens(result.content) <= 1_000
    assert cut.head_chars > 0 and cut.tail_chars > 0


def test_a_limit_too_small_for_the_note_keeps_what_fits_of_the_head() -> None:
    text = log_text(50_000)
    result, cut = bound_result(ToolResult(text), 5)
    assert cut is not None and cut.tail_chars == 0
    assert text.startswith(result.content) and 0 < count_tokens(result.content) <= 5


@pytest.mark.parametrize("chars", [1_000_000, 5_000_000])
def test_cutting_reads_about_the_limit_not_the_text(monkeypatch: pytest.MonkeyPatch, chars: int) -> None:
    from greenroom.tokens import counting as tokens

    seen = [0]
    count = tokens._count_piece
    encode = tokens._encode

    def counting(piece: str, encoding: str) -> int:
        seen[0] += len(piece)
        return count(piece, encoding)

    def encoding(piece: str, encoding: str) -> list[int]:
        seen[0] += len(piece)
        return encode(piece, encoding)

    monkeypatch.setattr(tokens, "_count_piece", counting)
    monkeypatch.setattr(tokens, "_encode", encoding)
    bound_result(ToolResult(log_text(chars)), 25_000)
    assert seen[0] < 1_500_000  # the same work for 1 MB and 5 MB: a few passes over what is kept


# ----------------------------------------------------------------------- the input check


def test_check_input_names_the_limit() -> None:
    check_input("hello", 10)
    text = "hello world, this input says a good deal more than ten tokens"
    assert count_tokens(text) > 10
    with pytest.raises(InputTooLongError, match=rf"over the limit of 10 tokens \({len(text)} characters\)"):
        check_input(text, 10)


# ----------------------------------------------------------------------- in a run


@tool
def read_log(lines: int = 0) -> str:
    """Read the service log."""
    return BIG[0]


BIG = [""]


def calls(name: str, n: int = 1, **arguments: Any) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": name, "arguments": arguments}]} for _ in range(n)]


@pytest.mark.anyio
@pytest.mark.parametrize("megabytes", [1, 5])
async def test_a_run_with_megabytes_of_tool_output_finishes_cut_traced_and_saved(
    make_runtime: Any, tmp_path: Path, megabytes: int
) -> None:
    BIG[0] = log_text(megabytes * 1_000_000)
    rt = make_runtime([*calls("read_log"), {"text": "the upstream resets"}], tools=[read_log])
    rec = Recorder()
    rt.events.subscribe(rec)
    trace = ev.TraceWriter(tmp_path / "trace.jsonl")
    rt.events.subscribe(trace)
    session = rt.session()
    outcome = await session.run("why is checkout slow?")
    trace.close()
    assert outcome.stop_reason == "final" and outcome.text == "the upstream resets"
    # the model's second request holds the cut result, with the note first
    second = rt.model.requests[1]
    result = second.messages[-1]
    assert result.role == "tool" and not result.is_error
    assert result.content.startswith("[greenroom cut this result") and count_tokens(result.content) <= 25_000
    assert result.content.split("\n", 2)[1] == BIG[0].split("\n", 1)[0]  # the log's first line
    # the trace: the cut as an event, and token counts on every request
    (cut,) = rec.of(ev.ResultCut)
    assert cut.tool == "read_log" and cut.original_chars == len(BIG[0]) and cut.limit == 25_000
    records = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    requests = [r for r in records if r["kind"] == "request"]
    assert len(requests) == 2 and requests[1]["messages_tokens"] > requests[0]["messages_tokens"] + 20_000
    assert next(r for r in records if r["kind"] == "tool_result")["content"] == result.content
    assert records[-1]["kind"] == "run_end" and records[-1]["stop_reason"] == "final"
    # the saved session holds the cut result, and resumes
    path = session.save(tmp_path / "s.json")
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert [m["content"] for m in saved["messages"] if m["role"] == "tool"] == [result.content]
    assert path.stat().st_size < 200_000


@pytest.mark.anyio
async def test_every_source_of_a_result_is_bounded(make_runtime: Any) -> None:
    """A gate's answer and an error text are cut like a tool's return value."""
    big = log_text(300_000)

    class Answers(Plugin):
        name = "answers"

        @hookimpl
        def greenroom_before_tool_execute(self, ctx: Any, call: Any, tool: Any) -> Decision | None:
            return Decision.answer(big) if call.arguments.get("lines") == 1 else None

    @tool
    def explode(lines: int = 0) -> str:
        """Fail loudly."""
        raise RuntimeError(big)

    rt = make_runtime(
        [{"tool_calls": [{"name": "read_log", "arguments": {"lines": 1}}, {"name": "explode", "arguments": {}}]},
         {"text": "done"}],
        tools=[read_log, explode],
        plugins=[Answers()],
        max_result_tokens=2_000,
    )  # fmt: skip
    rec = Recorder()
    rt.events.subscribe(rec)
    outcome = await rt.session().run("go")
    assert outcome.stop_reason == "final"
    results = [m for m in rt.model.requests[1].messages if m.role == "tool"]
    assert [m.is_error for m in results] == [False, True]
    assert all(count_tokens(m.content) <= 2_000 and m.content.startswith("[greenroom cut") for m in results)
    assert "tool 'explode' failed: RuntimeError" in results[1].content
    assert sorted(c.tool for c in rec.of(ev.ResultCut)) == ["explode", "read_log"]


@pytest.mark.anyio
async def test_an_input_over_the_limit_ends_the_run_before_any_model_call(make_runtime: Any, tmp_path: Path) -> None:
    ends: list[Any] = []

    class Ends(Plugin):
        name = "ends"

        @hookimpl
        def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
            ends.append(outcome)

    rt = make_runtime([{"text": "never"}], plugins=[Ends()])
    rec = Recorder()
    rt.events.subscribe(rec)
    session = rt.session()
    huge = log_text(2_000_000)
    with pytest.raises(InputTooLongError, match="over the limit of 200,000 tokens"):
        await session.run(huge)
    assert rt.model.requests == []  # nothing was sent
    (outcome,) = ends
    assert outcome.stop_reason == "error"
    assert outcome.failure == RunFailure("InputTooLongError", str(outcome.failure.message))
    assert "2,000,000 characters" in outcome.failure.message
    assert isinstance(rec.events[-1], ev.RunFinished) and rec.events[-1].stop_reason == "error"
    assert session.messages == []  # resuming would send it again
    # the session is still good for a normal input
    saved = json.loads(session.save(tmp_path / "s.json").read_text(encoding="utf-8"))
    assert saved["messages"] == []
    assert (await session.run("hello")).text == "never"


@pytest.mark.anyio
async def test_max_input_tokens_is_the_agents_own(make_runtime: Any) -> None:
    rt = make_runtime([{"text": "ok"}], max_input_tokens=5)
    with pytest.raises(InputTooLongError):
        await rt.session().run("one two three four five six seven")
    rt = make_runtime([{"text": "ok"}], max_input_tokens=50)
    assert (await rt.session().run("one two three four five six seven")).text == "ok"


def test_the_limits_are_config_keys_with_sane_bounds(tmp_path: Path) -> None:
    from greenroom.config import ConfigError, load_config

    good = tmp_path / "good.toml"
    good.write_text("[agent]\nmax_result_tokens = 4000\nmax_input_tokens = 9000\n", encoding="utf-8")
    agent = load_config(good).agent
    assert (agent.max_result_tokens, agent.max_input_tokens) == (4000, 9000)
    default = tmp_path / "default.toml"
    default.write_text("[agent]\n", encoding="utf-8")
    assert load_config(default).agent.max_result_tokens == 25_000
    for key, value in [("max_result_tokens", 0), ("max_result_tokens", -5), ("max_input_tokens", 0)]:
        bad = tmp_path / "bad.toml"
        bad.write_text(f"[agent]\n{key} = {value}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=rf"agent\.{key}"):
            load_config(bad)
