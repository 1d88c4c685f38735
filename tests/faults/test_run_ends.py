"""What ends a run short of an answer, through ``greenroom run``: a phase hook that raises,
a model that fails, ``max_steps``. Each exits 1 saying what ended it, the trace ends with
``run_end`` carrying the stop reason (and, for an error, the error and what failed), and
the saved session holds everything up to that point, every tool call answered."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Bench

STORE = {"tool_calls": [{"name": "store", "arguments": {"data": {}}}]}
PING = {"tool_calls": [{"name": "ping", "arguments": {}}]}
NOT_RUN = "tool 'store' was not run: the run ended with an error"


@pytest.mark.parametrize(
    ("hook", "saved"),
    [
        ("greenroom_run_start", [("user", "go")]),
        ("greenroom_hidden_tools", [("user", "go")]),
        ("greenroom_before_inference", [("user", "go")]),
        # the model's turn is kept, and its call answered, so the session can be resumed
        ("greenroom_after_inference", [("user", "go"), ("assistant", ""), ("tool", NOT_RUN)]),
    ],
)
def test_a_phase_hook_that_raises_ends_the_run_with_an_error_naming_the_plugin(
    faulty: Bench, hook: str, saved: list[tuple[str, str]]
) -> None:
    config = faulty.agent([STORE, {"text": "never"}], plugins=("faulty",))
    run = faulty.run(config, "go", env={"FAULT_RAISE": hook})
    end = run.ended("error", 1)
    named = f"plugin 'faulty' (distribution greenroom-fault-plugin 0.1) failed in hook {hook}"
    assert f"error: {named}: RuntimeError: faulty trips in {hook}" in run.stderr
    assert end["failure"] == {
        "error_type": "RuntimeError",
        "message": f"faulty trips in {hook}",
        "plugin": "faulty",
        "distribution": "greenroom-fault-plugin 0.1",
        "hook": hook,
    }
    assert named in end["error"]
    assert [(e["plugin"], e["hook"]) for e in run.events("error")] == [("faulty", hook)]
    assert [(m["role"], m["content"]) for m in run.messages()] == saved
    assert run.session()["runs"] == 1


def test_a_model_that_fails_ends_the_run_with_the_error_and_keeps_the_turns_before(bench: Bench) -> None:
    config = bench.agent([PING])  # the script ends before the model answers
    run = bench.run(config, "go")
    end = run.ended("error", 1)
    said = "the script has 1 turn(s) and the run asked for turn 2"
    assert "error: the model failed: " in run.stderr and said in run.stderr
    assert end["failure"]["error_type"] == "ScriptError" and said in end["error"]
    assert end["failure"]["plugin"] is None  # no plugin is to blame
    assert [(m["role"], m["content"]) for m in run.messages()] == [("user", "go"), ("assistant", ""), ("tool", "pong")]


def test_max_steps_ends_the_run_with_every_step_saved(bench: Bench) -> None:
    config = bench.agent([PING, PING, {"text": "never"}], settings={"max_steps": 2})
    run = bench.run(config, "go")
    end = run.ended("max_steps", 1)
    assert "run stopped: max_steps" in run.stderr
    assert end["steps"] == 2 and end["error"] is None
    assert [m["role"] for m in run.messages()] == ["user", "assistant", "tool", "assistant", "tool"]
    assert len(run.events("request")) == 2
