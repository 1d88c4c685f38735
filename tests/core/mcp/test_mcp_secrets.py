"""An MCP server's secrets never reach the model, the trace or the terminal, whoever
quotes them: a server that echoes the token from its ``env`` (as is, base64, inside a
Basic header, URL-encoded), its header values, or its URL's credentials in a tool
result, in structured content or in an error has them masked, while ordinary values
(a log level, a language) stay readable."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.gr_testutil import free_port

from greenroom._support.redact import MASK
from greenroom.compose.build import build_runtime
from greenroom.config import McpServerConfig
from greenroom.mcp import McpToolset
from greenroom.mcp.errors import is_credential, server_secrets
from greenroom.tools import ToolCallContext, ToolResult

HERE = Path(__file__).resolve().parent
SERVER = str(HERE / "secret_echo_server.py")
TOKEN = "tok-3f9a8b7c6d5e4f30"
PASSWORD = "pw-q8r7s6t5"
QUERY_TOKEN = "qt-0a1b2c3d4e5f"
API_KEY = "key-z9y8x7w6v5u4"
CTX: ToolCallContext[Any] = ToolCallContext(call_id="c1", run_id="r1", tool_name="t")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def forms(secret: str, user: str = "robot") -> list[str]:
    """How a careless server shows ``secret``."""
    return [secret, b64(secret), b64(f"{user}:{secret}"), urllib.parse.quote(secret, safe="")]


def shown(result: ToolResult) -> str:
    """Everything of a result anyone reads or passes on: its text, structured content, blocks."""
    blocks = [b.model_dump_json() for b in result.blocks or ()]
    return "\n".join([result.content, json.dumps(result.structured), *blocks])


def assert_hidden(text: str, *secrets: str) -> None:
    for secret in secrets:
        for form in forms(secret):
            assert form not in text, f"{form!r} shows in {text!r}"


def stdio_config(**kw: Any) -> McpServerConfig:
    env = {"API_TOKEN": TOKEN, "LOG_LEVEL": "verbose"}
    return McpServerConfig(name="sec", command=sys.executable, args=(SERVER,), env=env, timeout=30, **kw)


async def tools_of(toolset: McpToolset) -> dict[str, Any]:
    await toolset.prepare()
    (group,) = toolset.groups()
    return {t.descriptor.name: t for t in await group.load()}


# ---------------------------------------------------------------- what counts as a secret


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("API_TOKEN", "abcd", True),  # the name says so
        ("Authorization", "Bearer abc", True),
        ("X-Api-Key", "plainword", True),
        ("DB_PASSWORD", "sunshine", True),
        ("GITHUB", "ghp_x1Y2z3W4", True),  # the value looks like one
        ("LOG_LEVEL", "info", False),
        ("Accept", "application/json", False),
        ("PATH", "/usr/local/bin:/usr/bin", False),
        ("PORT", "8080", False),
        ("Accept-Language", "en-GB", False),
    ],
)
def test_which_env_and_header_values_are_credentials(name: str, value: str, secret: bool) -> None:
    assert is_credential(name, value) is secret


def test_a_servers_secrets_cover_env_headers_and_urls() -> None:
    dsn = f"postgresql://app:{PASSWORD}@db.example/app"
    basic = f"Basic {b64('svc:' + API_KEY)}"
    cfg = McpServerConfig(
        name="h",
        url=f"https://robot:{QUERY_TOKEN}@mcp.example/mcp?token={TOKEN}",
        headers={"Authorization": basic, "Accept": "application/json"},
    )
    secrets = server_secrets(cfg)
    said = f"auth {basic}; key {API_KEY}; svc:{API_KEY}; query {TOKEN}; user robot:{QUERY_TOKEN}; json application/json"
    masked = secrets.mask(said)
    assert_hidden(masked, API_KEY, TOKEN, QUERY_TOKEN)
    assert "application/json" in masked
    env_cfg = McpServerConfig(name="s", command="x", env={"DATABASE_URL": dsn, "MODE": "fast"})
    assert PASSWORD not in server_secrets(env_cfg).mask(f"could not connect as app:{PASSWORD}")
    # in its errors every value is hidden, the plain ones too, as before
    assert server_secrets(env_cfg, every_value=True).mask("mode fast") == f"mode {MASK}"


# ---------------------------------------------------------------- a stdio server's env


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_token_from_env_is_masked_in_results_structured_content_and_errors(tmp_path: Path) -> None:
    toolset = McpToolset([stdio_config()], tmp_path)
    try:
        tools = await tools_of(toolset)
        assert toolset.secrets  # what the runtime is given to mask everywhere

        leak = await tools["sec__leak"].execute({}, CTX)
        assert not leak.is_error
        assert_hidden(shown(leak), TOKEN)
        assert f"token: {MASK}" in leak.content and "log level: verbose" in leak.content

        structured = await tools["sec__leak_structured"].execute({}, CTX)
        assert_hidden(shown(structured), TOKEN)
        assert structured.structured is not None and structured.structured["level"] == "verbose"

        error = await tools["sec__leak_error"].execute({}, CTX)
        assert error.is_error
        assert_hidden(shown(error), TOKEN)
        assert "was refused" in error.content
    finally:
        await toolset.aclose()


# ---------------------------------------------------------------- an HTTP server's headers and URL


class EchoHttpServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while not self._listening():
            assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
            assert time.monotonic() < deadline, "the echo server never listened"
            time.sleep(0.05)

    def _listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if self.proc.stderr:
            self.proc.stderr.close()


@pytest.fixture
def echo_http() -> Iterator[EchoHttpServer]:
    server = EchoHttpServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.anyio
@pytest.mark.slow
async def test_header_values_and_url_credentials_echoed_by_a_server_are_masked(
    tmp_path: Path, echo_http: EchoHttpServer
) -> None:
    url = f"http://robot:{PASSWORD}@127.0.0.1:{echo_http.port}/mcp?token={QUERY_TOKEN}"
    headers = {"X-Api-Key": API_KEY, "Accept-Language": "en-GB"}
    toolset = McpToolset([McpServerConfig(name="sec", url=url, headers=headers, timeout=30)], tmp_path)
    try:
        tools = await tools_of(toolset)
        said = await tools["sec__leak_request"].execute({}, CTX)
        assert not said.is_error, said.content
        lines = dict(line.split(": ", 1) for line in said.content.splitlines())
        # the server did get them (a Basic header made from the URL's user info) ...
        assert lines["authorization"].startswith("Basic ") and lines["x-api-key"] != "<none>"
        # ... and nobody reads them back
        assert_hidden(shown(said), PASSWORD, API_KEY, QUERY_TOKEN)
        assert lines["x-api-key"] == MASK and lines["authorization"] == f"Basic {MASK}"
        assert lines["accept-language"] == "en-GB"
    finally:
        await toolset.aclose()


# ---------------------------------------------------------------- the whole run, end to end


@pytest.mark.slow
def test_the_runtime_is_given_the_servers_secrets(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.toml"
    (tmp_path / "script.jsonl").write_text(json.dumps({"text": "done"}) + "\n")
    cfg.write_text(
        '[agent]\nmodel = "scripted:script.jsonl"\n'
        f'[[tools.mcp]]\nname = "sec"\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n'
        f'env = {{ API_TOKEN = "{TOKEN}", LOG_LEVEL = "verbose" }}\n'
    )
    rt = build_runtime(cfg)
    try:
        # what the run masks tool results, tool errors and plugin errors with, whatever tool
        # quotes the token: the server's credentials, not its ordinary values
        assert rt.secrets.mask(f"x {TOKEN} {b64(TOKEN)} verbose") == f"x {MASK} {MASK} verbose"
    finally:
        anyio.run(rt.aclose)


@pytest.mark.slow
def test_a_run_never_shows_the_token_in_output_trace_or_session(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"name": "sec__leak", "arguments": {}}]},
        {"tool_calls": [{"name": "sec__leak_structured", "arguments": {}}]},
        {"tool_calls": [{"name": "sec__leak_error", "arguments": {}}]},
        {"text": "all done"},
    ]
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    cfg = tmp_path / "agent.toml"
    cfg.write_text(
        '[agent]\nmodel = "scripted:script.jsonl"\nmax_steps = 8\n\n'
        f'[[tools.mcp]]\nname = "sec"\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n'
        f'env = {{ API_TOKEN = "{TOKEN}", LOG_LEVEL = "verbose" }}\ndefer = false\ntimeout = 30\n\n'
        '[plugins]\ndisable = ["deferred-tools", "priors-persistence"]\n'
    )
    trace, session = tmp_path / "t.jsonl", tmp_path / "s.json"
    env = {**os.environ, "COLUMNS": "400", "GREENROOM_HOME": str(tmp_path / "home")}
    command = ["run", str(cfg), "go", "--trace", str(trace), "--session", str(session)]
    proc = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "all done" in proc.stdout
    assert "calls sec__leak" in proc.stdout  # the live view showed the calls and their results
    for where, text in [
        ("stdout", proc.stdout),
        ("stderr", proc.stderr),
        ("trace", trace.read_text()),
        ("session", session.read_text()),
    ]:
        for form in forms(TOKEN):
            assert form not in text, f"{form!r} shows in the {where}"
    results = [m for m in json.loads(session.read_text())["messages"] if m["role"] == "tool"]
    assert len(results) == 3
    assert f"token: {MASK}" in results[0]["content"] and "verbose" in results[0]["content"]
    assert results[2]["is_error"] and "was refused" in results[2]["content"]


PYTHON_TOOLS = f'''
from greenroom import tool


@tool
def quote_token() -> str:
    """Says the token (a Python tool that read it from somewhere)."""
    return "it is {TOKEN}"


@tool
def fail_with_token() -> str:
    """Fails quoting the token."""
    raise RuntimeError("cannot use {TOKEN}")


TOOLS = [quote_token, fail_with_token]
'''


@pytest.mark.slow
def test_a_python_tool_quoting_a_servers_token_is_masked_too(tmp_path: Path) -> None:
    # the server's secrets are the run's: whichever tool quotes them, the model, the events
    # and the session never see them
    (tmp_path / "pytools.py").write_text(PYTHON_TOOLS)
    turns = [
        {"tool_calls": [{"name": "quote_token", "arguments": {}}, {"name": "fail_with_token", "arguments": {}}]},
        {"text": "done"},
    ]
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    cfg = tmp_path / "agent.toml"
    cfg.write_text(
        '[agent]\nmodel = "scripted:script.jsonl"\n[tools]\npython = ["pytools.py:TOOLS"]\n'
        f'[[tools.mcp]]\nname = "sec"\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n'
        f'env = {{ API_TOKEN = "{TOKEN}" }}\n'
        '[plugins]\ndisable = ["deferred-tools", "priors-persistence"]\n'
    )
    rt = build_runtime(cfg)
    seen: list[Any] = []
    rt.events.subscribe(seen.append)

    async def go() -> Any:
        try:
            session = rt.session()
            await session.run("go")
            return session
        finally:
            await rt.aclose()

    session = anyio.run(go)
    results = [m for m in session.messages if m.role == "tool"]
    assert [r.content for r in results] == ["it is ***", "tool 'fail_with_token' failed: RuntimeError: cannot use ***"]
    events = json.dumps([e.to_json() for e in seen], default=str)
    for form in forms(TOKEN):
        assert form not in events


def test_the_cli_masks_the_runs_secrets_in_the_error_it_prints() -> None:
    from types import SimpleNamespace

    from greenroom._support.redact import Secrets
    from greenroom.cli.run_cmd import _masked

    rt = SimpleNamespace(secrets=Secrets([TOKEN]))
    assert _masked(rt, f"plugin 'audit' failed: bad token {b64(TOKEN)}") == f"plugin 'audit' failed: bad token {MASK}"
    assert _masked(None, "no runtime yet") == "no runtime yet"
