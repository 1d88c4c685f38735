"""``greenroom eval``'s ``code`` arm: dispatch with code mode on, whose simulated agent
writes one ``run_code`` script for the calls of a step. It does the tasks the dispatch arm
does, every gold call made from a script (gated and validated like any call), and its
overlay adds code mode to the plugins the config enables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.eval_testutil import write_catalog

from greenroom import ToolDescriptor
from greenroom_deferred.signatures import signature
from greenroom_lab.eval.arms import ARMS, parse_arms, write_overlays
from greenroom_lab.eval.plan import Target, evaluate
from greenroom_lab.eval.scripting import signature_tool
from greenroom_lab.eval.tasks import Mix

pytestmark = pytest.mark.slow


def test_the_code_arm_does_the_tasks_dispatch_does_with_one_script_a_step(tmp_path: Path) -> None:
    from greenroom_code.sandbox import DenoMissing, find_deno

    try:
        find_deno()
    except DenoMissing as exc:
        pytest.skip(str(exc))
    tools, tasks = write_catalog(tmp_path)
    mix = Mix(sessions=8, pool=4, zipf=1.0, seed=3, requests=1)  # one request: one script a session
    report = evaluate(Target(tools=tools), tasks, parse_arms("dispatch,code"), mix, tmp_path / "out")
    arms = {a["name"]: a for a in report["arms"]}
    plain, code = arms["dispatch"], arms["code"]
    assert code["success"] == plain["success"] == 1.0
    assert code["steps_per_session"] == plain["steps_per_session"]
    assert code["searches_per_session"] == plain["searches_per_session"]
    sessions = [json.loads(line) for line in (tmp_path / "out" / "sessions.jsonl").read_text().splitlines()]
    code_sessions = sorted((s for s in sessions if s["arm"] == "code"), key=lambda s: s["index"])
    plain_sessions = sorted((s for s in sessions if s["arm"] == "dispatch"), key=lambda s: s["index"])
    assert all(s["invalid_calls"] == 0 for s in code_sessions)
    # each gold call came from a script: the script's own call is counted beside them
    assert [s["calls"] for s in code_sessions] == [p["calls"] + 1 for p in plain_sessions]


def test_the_code_overlay_adds_code_mode_to_what_the_config_enables(tmp_path: Path) -> None:
    base = tmp_path / "base.toml"
    base.write_text('[agent]\nmodel = "scripted"\n[plugins]\nenable = ["otel"]\n', encoding="utf-8")
    written = write_overlays([ARMS["dispatch"], ARMS["code"]], base, tmp_path / "out")
    code = written["code"].read_text(encoding="utf-8")
    assert '[plugins]\nenable = ["otel", "code-mode"]' in code
    assert "[plugins]" not in written["dispatch"].read_text(encoding="utf-8")


def test_a_signature_reads_back_as_the_schema_a_call_needs() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city, e.g. Paris, Rome"},
            "days": {"type": "integer"},
            "unit": {"enum": ["c", "f"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "odd-key": {"type": "boolean"},
        },
        "required": ["city", "unit"],
    }
    tool = signature_tool(signature(ToolDescriptor("get_weather", "Weather for a city. More.", schema)))
    assert tool == {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "number"},
                "unit": {"enum": ["c", "f"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "odd-key": {"type": "boolean"},
            },
            "required": ["city", "unit"],
        },
    }
    assert signature_tool("not a signature") is None
