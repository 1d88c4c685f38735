"""A catalog of 100,000 real tools (the datasets repeated under new names) builds a
runtime that runs a scripted step, and a second process over a known catalog checks no
schema and counts no token: what the first computed is read from the digest cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.gr_testutil import DATASETS

from greenroom import Plugin, RequestSent, ToolExecuted, hookimpl
from greenroom.run.runtime import Runtime
from greenroom.tools.catalog import load_catalog

SOURCES = [DATASETS / name / "tools.jsonl" for name in ("seal_tools", "metatool", "github_mcp")]
pytestmark = pytest.mark.skipif(not all(p.exists() for p in SOURCES), reason="../shared/datasets not present")


def build_catalog(path: Path, size: int) -> list[str]:
    """``size`` tools: the datasets' tools, then again as ``name__rN`` (descriptions and
    schemas kept); the names, in order."""
    base: list[dict[str, Any]] = []
    for source in SOURCES:
        base += [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    names: list[str] = []
    seen: set[str] = set()
    with path.open("w", encoding="utf-8") as out:
        for r in range(size // len(base) + 2):
            for record in base:
                name = record["name"] if r == 0 else f"{record['name']}__r{r}"
                if name in seen:
                    continue
                seen.add(name)
                names.append(name)
                out.write(json.dumps({**record, "name": name}) + "\n")
                if len(names) == size:
                    return names
    return names


class SendFew(Plugin):
    """Sends only the named tools, as a deferral plugin would."""

    name = "send-few"

    def __init__(self, keep: set[str]) -> None:
        super().__init__()
        self.keep = keep

    @hookimpl
    def greenroom_before_inference(self, ctx: Any, request: Any) -> None:
        request.tools = [d for d in request.tools if d.name in self.keep]


@pytest.mark.anyio
async def test_a_runtime_over_100k_tools_builds_and_runs_a_step(
    tmp_path: Path, make_runtime: Callable[..., Runtime]
) -> None:
    names = build_catalog(tmp_path / "catalog.jsonl", 100_000)
    tools = load_catalog(tmp_path / "catalog.jsonl")
    assert len(tools) == 100_000
    target = names[-1]  # a repeat, deep in the catalog
    turns = [{"tool_calls": [{"name": target, "arguments": {}}]}, {"text": "done"}]
    rt = make_runtime(turns, tools=tools, plugins=[SendFew({target, names[0]})], max_steps=3)
    events: list[Any] = []
    rt.events.subscribe(events.append)
    outcome = await rt.session().run("go")
    assert outcome.stop_reason == "final" and outcome.text == "done"
    assert len(rt.tools) == 100_000
    sent = [e for e in events if isinstance(e, RequestSent)]
    assert [set(e.tool_names) for e in sent] == [{target, names[0]}] * 2
    executed = next(e for e in events if isinstance(e, ToolExecuted))
    # the call reached the tool: its arguments checked against its schema (compiled on use)
    assert executed.tool == target and executed.is_error and repr(target) in executed.content


SECOND_PROCESS = textwrap.dedent(
    """
    import json, sys
    from greenroom._support.digest_cache import default_digest_cache, work
    from greenroom.tokens.tool_costs import COST_FIELDS, tool_costs
    from greenroom.compose.sources import schema_problems
    from greenroom.tools.catalog import load_catalog
    from greenroom.tools.toolset import ToolSet

    tools = ToolSet(load_catalog(sys.argv[1]))
    descriptors = [tools[name].descriptor for name in tools]
    costs = {field: sum(tool_costs(descriptors, field)) for field in COST_FIELDS}
    flagged = sum(bool(schema_problems(d.parameters)) for d in descriptors)
    print(json.dumps({"work": dict(work), "costs": costs, "unusable": sorted(tools.unusable), "flagged": flagged,
                      "hits": default_digest_cache().stats["hits"]}))
    """
)


def test_a_second_process_over_a_known_catalog_checks_and_counts_nothing(tmp_path: Path) -> None:
    build_catalog(tmp_path / "catalog.jsonl", 1000)
    script = tmp_path / "second.py"
    script.write_text(SECOND_PROCESS)
    env = {**os.environ, "GREENROOM_HOME": str(tmp_path / "home")}

    def run() -> dict[str, Any]:
        cmd = [sys.executable, str(script), str(tmp_path / "catalog.jsonl")]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=120)
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    first, second = run(), run()
    assert first["work"]["schema checks"] >= 1000 and first["work"]["token counts"] >= 1000
    assert second["work"].get("schema checks", 0) == 0
    assert second["work"].get("token counts", 0) == 0
    assert second["hits"] > 0
    assert (second["costs"], second["unusable"], second["flagged"]) == (
        first["costs"],
        first["unusable"],
        first["flagged"],
    )
