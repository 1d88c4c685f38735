"""The simulated agent never receives a gold answer: it is made with nothing, it is given
nothing but requests, and what it reads and does is the same whatever the task file's
gold labels, ids and checkers say (a probe with decoy gold and sentinel metadata)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from support.eval_testutil import FILLER, TASKS, write_catalog

from greenroom import ModelRequest, ModelResponse
from greenroom_lab.eval.agent import SimulatedAgent
from greenroom_lab.eval.arms import parse_arms
from greenroom_lab.eval.plan import Target, evaluate
from greenroom_lab.eval.tasks import Mix

SENTINEL = "zq-gold-sentinel"
CHECKS = f"""
def {SENTINEL.replace("-", "_")}(t):
    return True
"""


def read(request: ModelRequest) -> str:
    """Everything a request shows the agent, as one text."""
    return json.dumps(
        {
            "system": request.system_text,
            "tools": [[t.name, t.description, t.parameters] for t in request.tools],
            "messages": [[m.role, m.content, [[c.name, c.arguments] for c in m.tool_calls]] for m in request.messages],
        },
        sort_keys=True,
        default=str,
    )


def said(response: ModelResponse) -> str:
    message = response.message
    return json.dumps([message.content, [[c.name, c.arguments] for c in message.tool_calls]], sort_keys=True)


def transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, gold: list[list[str]]) -> list[str]:
    """What the agent read and said over an evaluation of ``TASKS`` with these gold labels
    (and ids and checkers that name a sentinel), every arm, in order."""
    seen: list[str] = []
    complete = SimulatedAgent.complete

    async def spy(self: SimulatedAgent, request: ModelRequest) -> ModelResponse:
        response = await complete(self, request)
        seen.append(read(request))
        seen.append(said(response))
        return response

    monkeypatch.setattr(SimulatedAgent, "complete", spy)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "gold_probe_checks.py").write_text(CHECKS)
    monkeypatch.syspath_prepend(str(folder))
    tools, _ = write_catalog(folder)
    tasks = folder / "tasks.jsonl"
    check = f"gold_probe_checks:{SENTINEL.replace('-', '_')}"
    lines = [{**t, "gold": g, "id": f"{SENTINEL}-{t['id']}", "check": check} for t, g in zip(TASKS, gold, strict=True)]
    tasks.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    mix = Mix(sessions=10, pool=4, zipf=1.0, seed=5, stream="verbatim", requests=2)
    report = evaluate(Target(tools=tools), tasks, parse_arms("all-eager,dispatch,dispatch+priors"), mix, folder / "o")
    assert [a["sessions"] for a in report["arms"]] == [10, 10, 10]
    monkeypatch.undo()
    return seen


def test_the_simulated_agent_is_made_with_nothing() -> None:
    assert list(inspect.signature(SimulatedAgent).parameters) == []  # no way in for a task, its gold or checker
    assert list(inspect.signature(SimulatedAgent.complete).parameters) == ["self", "request"]


def test_what_the_simulated_agent_reads_and_does_does_not_depend_on_gold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    true_gold = [t["gold"] for t in TASKS]
    decoys = [[FILLER[i][0]] for i in range(len(TASKS))]  # tools no task asks for
    honest = transcript(tmp_path, monkeypatch, "true", true_gold)
    decoyed = transcript(tmp_path, monkeypatch, "decoy", decoys)
    assert honest and honest == decoyed  # every request and every answer, whatever the labels say
    everything = "\n".join(decoyed)
    assert SENTINEL not in everything  # no task id or checker reaches what it reads
    for (name,) in decoys:
        assert f'"{name}"' not in "\n".join(decoyed[1::2])  # never called or asked for by name
    listed: Any = [read for read in decoyed[0::2] if FILLER[0][0] in read]
    assert listed  # the decoys are tools it can see: what it was never told is which ones count
