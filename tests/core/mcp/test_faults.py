"""MCP faults read right, with a real stdio server (``fault_server.py``) that fails on
demand: a start failure reaches the model as one (with the server's stderr, redacted); the
call after a hang works even with a short ``timeout``; a start is not cut short by a
caller that gives up; a name listed twice is two tools; and no server outlives a
greenroom that is terminated (SIGTERM, SIGINT, SIGHUP)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from greenroom.compose.build import build_runtime
from greenroom.config import AgentConfig, McpServerConfig
from greenroom.mcp import McpToolset
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
SERVER = str(HERE / "fault_server.py")
SECRET = "tok-live-0123456789abcdef"


def fault_config(name: str, **keys: Any) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(SERVER,), **keys)


def server_table(name: str, env: dict[str, str], **keys: Any) -> str:
    lines = [
        "[[tools.mcp]]",
        f"name = {json.dumps(name)}",
        f"command = {json.dumps(sys.executable)}",
        f"args = [{json.dumps(SERVER)}]",
        "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }",
    ]
    lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def write_agent(folder: Path, servers: str, turns: list[dict[str, Any]], plugins: str) -> Path:
    (folder / "script.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    path = folder / "agent.toml"
    path.write_text(f'[agent]\nmodel = "scripted:script.jsonl"\nmax_steps = 8\n\n{servers}\n{plugins}')
    return path


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args}]}


def tool_results(session: Any) -> list[Any]:
    return [m for m in session.messages if m.role == "tool"]


def runtime_over(toolset: McpToolset, turns: list[dict[str, Any]]) -> Runtime:
    rt = Runtime(
        model=ScriptedModel(turns),
        tools=toolset.tools(),
        host=make_plugin_host(records=[]),
        agent=AgentConfig(max_steps=6),
    )
    rt.on_close(toolset.aclose)
    return rt


def wait_for(what: str, predicate: Callable[[], bool], timeout: float = 30.0, detail: Callable[[], str] = str) -> None:
    """A bounded poll that fails loudly, saying what it waited for."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:g} s for {what}; {detail()}")
        time.sleep(0.05)


def ended(pid: int) -> bool:
    """True when ``pid`` is gone, or a zombie nobody has reaped yet (it runs no more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:  # pragma: no cover - no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


# ----------------------------------------------------------------------------- start failures


DEFERRED = '[plugins.deferred-tools]\nenabled = true\nstrategy = "dispatch"\n'


async def test_a_start_failure_reaches_the_model_as_one(tmp_path: Path, no_leftovers: None) -> None:
    """The server was listed once (a later process builds from the cache), then breaks:
    whichever way the model calls its tool, it reads why the server did not start, with
    the server's last stderr lines, secrets masked; never "no tool named"."""
    turns = [{"text": "listed"}]
    healthy = write_agent(tmp_path, server_table("faulty", {"TOKEN": SECRET}), turns, DEFERRED)
    rt = build_runtime(healthy)  # nothing cached yet: the build lists the server
    await rt.aclose()

    broken_env = {"TOKEN": SECRET, "FAULT_FAIL": "1"}
    turns = [
        call("deferred_tool_call", tool_name="faulty__echo", arguments={"text": "hi"}),
        call("faulty__echo", text="hi"),
        call("load_tools", group_id="mcp:faulty"),
        {"text": "the server is down"},
    ]
    broken = write_agent(tmp_path, server_table("faulty", broken_env), turns, DEFERRED)
    rt = build_runtime(broken)
    try:
        session = rt.session()
        outcome = await session.run("echo hi")
    finally:
        await rt.aclose()
    assert outcome.stop_reason == "final"
    dispatched, by_name, loaded = tool_results(session)
    for result in (dispatched, by_name):
        assert result.is_error and result.name == "faulty__echo"
        assert f"MCP server 'faulty' failed to start (command: {sys.executable} {SERVER})" in result.content
        assert "closed the connection before the MCP handshake completed" in result.content
        assert "Server stderr (last lines):\nfatal: the token *** was refused" in result.content
    assert "faulty__echo" in json.loads(loaded.content)["tool_names"]  # known from the last listing
    for message in session.messages:
        assert SECRET not in message.content and "no tool named" not in message.content


async def test_a_server_never_listed_says_why_it_is_not_loadable(tmp_path: Path, no_leftovers: None) -> None:
    env = {"TOKEN": SECRET, "FAULT_FAIL": "1"}
    turns = [call("load_tools", group_id="mcp:faulty"), {"text": "down"}]
    rt = build_runtime(write_agent(tmp_path, server_table("faulty", env), turns, DEFERRED))
    try:
        session = rt.session()
        await session.run("load it")
    finally:
        await rt.aclose()
    (loaded,) = tool_results(session)
    error = json.loads(loaded.content)["error"]
    assert loaded.is_error and error.startswith("loading mcp:faulty failed: McpStartError: MCP server 'faulty'")
    assert "fatal: the token *** was refused" in error and SECRET not in loaded.content


# ----------------------------------------------------------------------------- hangs and slow starts


@pytest.mark.parametrize("timeout", [1.5, 5.0])
async def test_the_call_after_a_hung_server_works_with_a_short_timeout(
    tmp_path: Path, timeout: float, no_leftovers: None
) -> None:
    """The hung call is bounded by ``timeout``; the next one pings (no answer), restarts
    the server and calls it, each step with its own bound, so it works."""
    cfg = fault_config("stuck", defer=False, timeout=timeout, env={"FAULT_MARK_FILE": str(tmp_path / "mark")})
    toolset = McpToolset([cfg], tmp_path)
    await toolset.prepare()
    rt = runtime_over(toolset, [call("stuck__hang"), call("stuck__echo", text="back"), {"text": "done"}])
    try:
        session = rt.session()
        outcome = await session.run("hang, then echo")
        server = toolset.servers["stuck"]
        starts = server.starts
    finally:
        await rt.aclose()
    hung, after = tool_results(session)
    # the runtime's bound and the server's own are the same: either may say so first
    assert hung.is_error and any(
        f"{said} {timeout:g} s" in hung.content
        for said in ("timed out after", "did not answer the call to 'hang' within")
    ), hung.content
    assert not after.is_error and after.content == "back", after.content
    assert outcome.stop_reason == "final" and starts == 2


async def test_a_slow_start_is_not_cut_short_by_a_short_call_timeout(tmp_path: Path, no_leftovers: None) -> None:
    """The first call gives up after its 0.5 s, but the start goes on (bounded by
    connect_timeout only), so the next call finds the server up: one start, not one per call."""
    cfg = fault_config("slow", defer=False, timeout=0.5, env={"FAULT_SLOW_START": "2"})
    toolset = McpToolset([cfg], tmp_path)
    await toolset.prepare()  # nothing cached: lists the server (a first start of 2 s)
    await toolset.aclose()  # a later process: the cache is enough, nothing runs

    toolset = McpToolset([cfg], tmp_path)
    await toolset.prepare()
    assert not toolset.host.running
    rt = runtime_over(toolset, [call("slow__echo", text="one"), call("slow__echo", text="two"), {"text": "done"}])
    try:
        session = rt.session()
        await session.run("echo twice")
        starts = toolset.servers["slow"].starts
    finally:
        await rt.aclose()
    first, second = tool_results(session)
    assert first.is_error and "timed out after 0.5 s" in first.content
    assert not second.is_error and second.content == "two"
    assert starts == 1


# ----------------------------------------------------------------------------- duplicate names


async def test_a_name_listed_twice_is_two_tools_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, no_leftovers: None
) -> None:
    cfg = fault_config("dup", defer=False, env={"FAULT_DUPLICATE": "1"})
    with caplog.at_level(logging.WARNING, logger="greenroom.mcp"):
        toolset = McpToolset([cfg], tmp_path)
        await toolset.prepare()
    try:
        tools = {t.descriptor.name: t for t in toolset.tools()}
        assert sorted(tools) == ["dup__echo", "dup__echo_2", "dup__hang"]
        assert tools["dup__echo_2"].descriptor.description == "Echo the text (the second copy)."
        assert tools["dup__echo_2"].mcp_name == "echo"
        result = await toolset.servers["dup"].call_tool(tools["dup__echo_2"].mcp_name, {"text": "twice"})
        assert result.content == "twice"
    finally:
        await toolset.aclose()
    assert "MCP server 'dup' lists the tool 'echo' more than once; copy 2 is 'dup__echo_2'" in caplog.text
    # stable: a later process builds the same names from the cached listing
    again = McpToolset([cfg], tmp_path)
    assert [t.descriptor.name for t in again.tools()] == [t.descriptor.name for t in tools.values()]


# ----------------------------------------------------------------------------- termination


def run_blocked_greenroom(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """``greenroom run`` in a subprocess, its tool call blocked inside the server; returns
    the process and the server's pid."""
    pid_file, mark = tmp_path / "server.pid", tmp_path / "mark"
    env = {"FAULT_PID_FILE": str(pid_file), "FAULT_MARK_FILE": str(mark)}
    plugins = '[plugins]\ndisable = ["deferred-tools", "priors-persistence"]\n'
    cfg = write_agent(
        tmp_path, server_table("blk", env, defer=False, timeout=600), [call("blk__hang"), {"text": "done"}], plugins
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "greenroom.cli", "run", str(cfg), "block", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a signal for it never reaches pytest
    )

    def why() -> str:
        if proc.poll() is None:
            return "greenroom still runs"
        out, err = proc.communicate()
        return f"greenroom exited {proc.returncode}: {out} {err}"

    wait_for("the server to block in its tool", lambda: mark.exists() or proc.poll() is not None, detail=why)
    assert proc.poll() is None, why()
    return proc, int(pid_file.read_text())


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_no_server_outlives_a_terminated_greenroom(tmp_path: Path, signame: str) -> None:
    proc, server_pid = run_blocked_greenroom(tmp_path)
    try:
        assert not ended(server_pid)
        os.kill(proc.pid, getattr(signal, signame))
        _, err = proc.communicate(timeout=60)
        assert proc.returncode != 0
        if signame != "SIGINT":  # Ctrl-C is the run's own (a clean cancel); these end it as before
            assert proc.returncode == -getattr(signal, signame), err
        wait_for(f"server {server_pid} to end after {signame}", lambda: ended(server_pid), 15)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        if not ended(server_pid):
            os.kill(server_pid, signal.SIGKILL)
