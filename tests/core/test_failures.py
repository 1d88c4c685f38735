"""What ends a run badly, and what holds whatever ends it: a phase hook's failure ends the
run with a named error, RunEnd reaches every plugin, the trace ends with ``run_end``
carrying the outcome and the error, and ``greenroom run --session`` saves the session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from greenroom import Event, Plugin, PluginHookError, RunFailure, hookimpl, tool
from greenroom import events as ev
from greenroom.failures import first_error

if sys.version_info < (3, 11):
    from exceptiongroup import ExceptionGroup


@tool
def echo(text: str) -> str:
    """Echo text."""
    return text


class Ends(Plugin):
    """Records how each run ended, as RunEnd tells it."""

    name = "ends"

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: list[Any] = []

    @hookimpl(trylast=True)
    def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
        self.outcomes.append(outcome)


def phase_failer(hook: str, *, is_async: bool) -> Plugin:
    """A plugin whose phase ``hook`` raises on step 1 (or at once for the run-level hooks)."""

    def fail(self: Any, ctx: Any) -> None:
        raise ValueError(f"broken {hook}")

    async def fail_async(self: Any, ctx: Any) -> None:
        fail(self, ctx)

    return type("Failer", (Plugin,), {"name": "failer", hook: hookimpl(fail_async if is_async else fail)})()


def recorded(rt: Any) -> list[Event]:
    events: list[Event] = []
    rt.events.subscribe(events.append)
    return events


PHASE_HOOKS = [
    "greenroom_run_start",
    "greenroom_hidden_tools",
    "greenroom_before_inference",
    "greenroom_after_inference",
]


@pytest.mark.anyio
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("hook", PHASE_HOOKS)
async def test_a_phase_hook_that_raises_ends_the_run_with_a_named_error(
    make_runtime, hook: str, is_async: bool
) -> None:
    ends = Ends()
    rt = make_runtime([{"text": "never"}], tools=[echo], plugins=[phase_failer(hook, is_async=is_async), ends])
    events = recorded(rt)
    session = rt.session()
    with pytest.raises(PluginHookError) as info:
        await session.run("go")
    err = info.value
    assert (err.plugin, err.hook, err.reason) == ("failer", hook, f"ValueError: broken {hook}")

    failure = RunFailure("ValueError", f"broken {hook}", "failer", err.distribution, hook)
    (outcome,) = ends.outcomes  # RunEnd still reached the other plugins
    assert outcome.stop_reason == "error" and outcome.failure == failure and outcome.error == str(err)
    error_events = [e for e in events if isinstance(e, ev.PluginError)]
    assert [(e.plugin, e.hook, e.call_id) for e in error_events] == [("failer", hook, None)]
    last = events[-1]
    assert isinstance(last, ev.RunFinished)
    assert (last.stop_reason, last.failure, last.error) == ("error", failure, str(err))
    assert session.last_snapshot is not None


@pytest.mark.anyio
async def test_a_raising_run_end_does_not_skip_the_other_plugins(make_runtime) -> None:
    class Fails(Plugin):
        name = "fails-first"

        @hookimpl(tryfirst=True)
        def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
            raise OSError("cannot save")

    class AlsoFails(Plugin):
        name = "fails-async"

        @hookimpl
        async def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
            raise RuntimeError("neither")

    ends = Ends()
    rt = make_runtime([{"text": "bye"}], plugins=[ends, Fails(), AlsoFails()])
    events = recorded(rt)
    outcome = await rt.session().run("x")
    assert outcome.stop_reason == "final" and outcome.text == "bye"  # the answer stands
    assert [o.stop_reason for o in ends.outcomes] == ["final"]
    errors = [(e.plugin, e.hook, e.message) for e in events if isinstance(e, ev.PluginError)]
    assert sorted(errors) == [
        ("fails-async", "greenroom_run_end", "RuntimeError: neither"),
        ("fails-first", "greenroom_run_end", "OSError: cannot save"),
    ]
    assert isinstance(events[-1], ev.RunFinished) and events[-1].failure is None


@pytest.mark.anyio
@pytest.mark.parametrize("calls", [1, 2])
async def test_an_unexpected_error_in_a_turn_is_raised_itself_after_run_end(make_runtime, calls: int) -> None:
    """An exception from inside a turn's tool calls (a failing event listener, say) reaches
    the caller as itself, not as a task group, and the session stays valid."""
    ends = Ends()
    rt = make_runtime(
        [{"tool_calls": [{"name": "echo", "arguments": {"text": t}} for t in "ab"[:calls]]}],
        tools=[echo],
        plugins=[ends],
        max_concurrency=1,
    )

    def disk_full(event: Event) -> None:
        if isinstance(event, ev.ToolExecuted):
            raise OSError("disk full")

    events = recorded(rt)
    rt.events.subscribe(disk_full)
    session = rt.session()
    with pytest.raises(OSError, match="disk full"):
        await session.run("go")
    (outcome,) = ends.outcomes
    assert outcome.failure == RunFailure("OSError", "disk full") and outcome.stop_reason == "error"
    assert isinstance(events[-1], ev.RunFinished) and events[-1].stop_reason == "error"
    # every call of the interrupted turn is answered, so the session can be resumed
    results = [m for m in session.messages if m.role == "tool"]
    assert [m.tool_call_id for m in results] == ["call_1_0", "call_1_1"][:calls] and all(m.is_error for m in results)


@pytest.mark.anyio
async def test_the_trace_ends_with_run_end_carrying_the_outcome_and_the_error(make_runtime, tmp_path: Path) -> None:
    rt = make_runtime([{"text": "never"}], plugins=[phase_failer("greenroom_before_inference", is_async=False)])
    writer = ev.TraceWriter(tmp_path / "t.jsonl")
    rt.events.subscribe(writer)
    with pytest.raises(PluginHookError):
        await rt.session().run("go")
    writer.close()
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in lines] == ["run_start", "error", "run_end"]
    last = lines[-1]
    assert last["stop_reason"] == "error" and "broken greenroom_before_inference" in last["error"]
    assert last["failure"]["plugin"] == "failer" and last["failure"]["hook"] == "greenroom_before_inference"


def test_first_error_unwraps_nested_groups() -> None:
    inner = KeyError("k")
    group = ExceptionGroup("outer", [ExceptionGroup("inner", [inner, ValueError()])])
    assert first_error(group) is inner
    plain = RuntimeError("x")
    assert first_error(plain) is plain


# -------------------------------------------------------------------- through the CLI

RAISER = '''
"""A plugin that raises in the hook named by RAISER_HOOK."""
import os

from greenroom import Plugin, hookimpl


def trip(hook):
    if os.environ.get("RAISER_HOOK") == hook:
        raise RuntimeError("raiser trips in " + hook)


class Raiser(Plugin):
    name = "raiser"

    @hookimpl
    def greenroom_before_inference(self, ctx, request):
        if ctx.step == 2:
            trip("greenroom_before_inference")

    @hookimpl
    def greenroom_before_tool_execute(self, ctx, call, tool):
        trip("greenroom_before_tool_execute")

    @hookimpl
    def greenroom_run_end(self, ctx, outcome):
        trip("greenroom_run_end")
'''


@pytest.fixture(scope="module")
def raiser_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A distribution with the raiser plugin, importable only by the subprocesses given
    this folder on PYTHONPATH (importlib.metadata reads the dist-info there)."""
    site = tmp_path_factory.mktemp("raiser-site")
    (site / "greenroom_raiser.py").write_text(RAISER)
    info = site / "greenroom_raiser_test-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: greenroom-raiser-test\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[greenroom.plugins]\nraiser = greenroom_raiser:Raiser\n")
    return site


def run_cli(site: Path, folder: Path, hook: str) -> subprocess.CompletedProcess[str]:
    (folder / "tools.py").write_text(
        textwrap.dedent('''
            from greenroom import tool

            @tool
            def echo(text: str) -> str:
                """Echo text."""
                return text

            TOOLS = [echo]
        ''')
    )
    turns = [{"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}, {"text": "done"}]
    (folder / "script.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (folder / "agent.toml").write_text(
        '[agent]\nmodel = "scripted:script.jsonl"\n[tools]\npython = ["tools.py:TOOLS"]\n'
        '[plugins]\nenable = ["scripted", "raiser"]\n'
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "RAISER_HOOK": hook,
        "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1",
        "COLUMNS": "300",
    }
    args = ["run", "agent.toml", "go", "--session", "s.json", "--trace", "t.jsonl"]
    return subprocess.run(
        [sys.executable, "-m", "greenroom.cli", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("hook", "exit_code", "stop_reason"),
    [
        ("greenroom_before_inference", 1, "error"),  # a phase hook: the run ends, named
        ("greenroom_before_tool_execute", 0, "final"),  # a per-call hook: that call fails, the run goes on
        ("greenroom_run_end", 0, "final"),  # reported; the answer stands
    ],
)
def test_the_cli_names_the_failure_and_saves_the_session_and_trace(
    raiser_path: Path, tmp_path: Path, hook: str, exit_code: int, stop_reason: str
) -> None:
    done = run_cli(raiser_path, tmp_path, hook)
    output = done.stdout + done.stderr
    assert done.returncode == exit_code, output
    assert "Traceback" not in output and "ExceptionGroup" not in output
    named = f"plugin 'raiser' (distribution greenroom-raiser-test 0.1) failed in hook {hook}"
    if exit_code:
        assert f"error: {named}: RuntimeError: raiser trips in {hook}" in done.stderr
    else:
        assert f"{named}: RuntimeError: raiser trips in {hook}" in done.stdout  # live view

    saved = json.loads((tmp_path / "s.json").read_text())
    assert saved["runs"] == 1
    roles = [m["role"] for m in saved["messages"]]
    assert roles[:3] == ["user", "assistant", "tool"]
    tool_result = saved["messages"][2]
    if hook == "greenroom_before_tool_execute":
        assert (
            tool_result["is_error"]
            and "plugin 'raiser' failed in greenroom_before_tool_execute" in tool_result["content"]
        )
    else:
        assert tool_result["content"] == "hi"

    trace = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert trace[-1]["kind"] == "run_end" and trace[-1]["stop_reason"] == stop_reason
    assert [(e["plugin"], e["hook"]) for e in trace if e["kind"] == "error"] == [("raiser", hook)]
    if exit_code:
        assert trace[-1]["failure"] == {
            "error_type": "RuntimeError",
            "message": f"raiser trips in {hook}",
            "plugin": "raiser",
            "distribution": "greenroom-raiser-test 0.1",
            "hook": hook,
        }
