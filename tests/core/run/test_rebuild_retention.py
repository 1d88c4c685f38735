"""A runtime built again and again in one long-lived process (a server, a test suite,
a notebook) does not leave the last one behind: once a runtime is closed and let go,
the process-wide caches keep nothing that grows with the number built, so the garbage
collector, which scans every object still tracked on each full collection, does not
get slower with every build."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import anyio

from greenroom.compose.build import build_runtime

SIZE = 3000


def config(tmp_path: Path) -> Path:
    lines = []
    for i in range(SIZE):
        params = {"type": "object", "properties": {"city": {"type": "string"}, "day": {"type": "integer"}}}
        lines.append(
            {
                "name": f"tool_{i}",
                "description": f"Books flight {i} to city {i % 97}.",
                "parameters": params,
                "group": f"group_{i % 40}",
            }
        )
    (tmp_path / "catalog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    turns = [
        {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": "book a flight to city 12"}}]},
        {"tool_calls": [{"name": "tool_12", "arguments": {"city": "x"}}]},
        {"text": "done"},
    ]
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    text = '[agent]\nid = "rebuilt"\nmodel = "scripted:script.jsonl"\n\n[tools]\ncatalogs = ["catalog.jsonl"]\n'
    (tmp_path / "agent.toml").write_text(text, encoding="utf-8")
    return tmp_path / "agent.toml"


def build_run_close(path: Path) -> str:
    rt = build_runtime(path)

    async def go() -> str:
        try:
            outcome = await rt.session().run("book me a flight")
        finally:
            await rt.aclose()
        return outcome.text

    return anyio.run(go)


def tracked() -> int:
    gc.collect()
    return len(gc.get_objects())


def test_building_runtimes_again_keeps_no_more_objects_each_time(tmp_path: Path) -> None:
    path = config(tmp_path)
    assert build_run_close(path) == "done"  # the search and the call ran
    assert build_run_close(path) == "done"
    settled = tracked()
    for _ in range(3):
        build_run_close(path)
    grown = tracked() - settled
    # a runtime over this catalog holds about two objects per tool (descriptor, schema);
    # what is kept per build must be nowhere near that, whatever the number of builds
    assert grown < SIZE // 10, f"{grown} more objects tracked after 3 more builds of {SIZE} tools"
