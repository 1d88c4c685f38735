"""Fixtures for code mode: Deno (from the ``deno`` package of the dev extra), a greenroom
home of the test's own, agents built from a config and a scripted model, and a way to find
sandbox processes that outlived their script."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from greenroom import events as ev
from greenroom.compose.build import abuild_runtime
from greenroom.run.runtime import Runtime


@pytest.fixture(autouse=True)
def deno() -> str:
    from greenroom_code.sandbox import DenoMissing, find_deno

    try:
        return find_deno()
    except DenoMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture(autouse=True)
def gr_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "gr-home"
    monkeypatch.setenv("GREENROOM_HOME", str(home))
    return home


@pytest.fixture
def time_server() -> str:
    """The TOML of mcp-server-time as a deferred MCP server (a group of its own, loaded on first use)."""
    pytest.importorskip("mcp_server_time", reason="needs mcp-server-time (pip install mcp-server-time)")
    return (
        f'[[tools.mcp]]\nname = "time"\ncommand = "{sys.executable}"\n'
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
    )


def write_agent(folder: Path, turns: Sequence[dict[str, Any]], extra: str = "", *, enable: bool = True) -> Path:
    """An agent config with code mode on and a scripted model playing ``turns``."""
    (folder / "turns.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n", encoding="utf-8")
    config = folder / "agent.toml"
    plugins = '[plugins]\nenable = ["code-mode"]\n' if enable else ""
    config.write_text(f'[agent]\nid = "code"\nmodel = "scripted:turns.jsonl"\n{extra}\n{plugins}', encoding="utf-8")
    return config


Built = Callable[..., Any]


@pytest.fixture
def agent(tmp_path: Path) -> Built:
    """``await agent(turns, extra_toml)`` -> (runtime, events): built, listening; closed by the caller."""

    async def build(turns: Sequence[dict[str, Any]], extra: str = "", **kw: Any) -> tuple[Runtime, list[ev.Event]]:
        rt = await abuild_runtime(write_agent(tmp_path, turns, extra, **kw))
        events: list[ev.Event] = []
        rt.events.subscribe(events.append)
        return rt, events

    return build


@pytest.fixture
def sandboxes() -> Callable[[], list[int]]:
    """``sandboxes()``: the live sandbox processes this test process started."""
    return live_sandboxes


def live_sandboxes() -> list[int]:
    """Live sandbox processes (Deno running the harness) that are children of this process."""
    me = str(os.getpid())
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text(errors="replace")
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == me and fields[0] != "Z" and "greenroom_code/harness.js" in cmdline:
            out.append(int(entry))
    return out
