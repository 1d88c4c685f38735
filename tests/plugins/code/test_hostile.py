"""Hostile scripts: each kind ends as an error result the model reads (or, for a flood of
console output, a bounded one), the run goes on to its next turn, and no sandbox process
outlives its script."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LIMITS = "[plugins.code-mode]\ntimeout = 3\nmemory_mb = 64\nmax_calls = 20\nmax_message_bytes = 65536\n"
TOOLS = '[tools]\npython = ["tests_code_tools:TOOLS"]\n'

HOSTILE = {
    "network": ("await fetch('http://127.0.0.1:8080/')", "NotCapable: Requires net access"),
    "websocket": ("new WebSocket('ws://127.0.0.1:9/')", "NotCapable: Requires net access"),
    "require": ("const fs = require('fs'); return fs.readFileSync('/etc/passwd', 'utf8')", "require is not defined"),
    "files": ("return Deno.readTextFileSync('/etc/passwd')", "Deno is not defined"),
    "import a file": ("return (await import('file:///etc/passwd')).default", "Requires read access"),
    "import by eval": ("return await eval(\"import('file:///etc/hostname')\")", "Requires read access"),
    "environment": ("return Deno.env.toObject()", "Deno is not defined"),
    "subprocess": ("return new Deno.Command('/bin/sh', {args: ['-c', 'id']}).outputSync()", "Deno is not defined"),
    "exit": ("Deno.exit(0)", "Deno is not defined"),
    "close": ("close(); return 1", "close is not defined"),
    "endless loop": ("while (true) {}", "timed out after 3 s"),
    "endless awaits": ("for (;;) await null", "timed out after 3 s"),
    "heap bomb": ("const a = []; for (;;) a.push(new Array(1e5).fill(1))", "ran out of memory (its limit is 64 MB)"),
    "buffer bomb": (
        "const b = []; for (;;) b.push(new Uint8Array(64 << 20).fill(1))",
        "ran out of memory (its limit is 64 MB)",
    ),
    "flood of calls": ("for (let i = 0; ; i++) await tools.echo({text: String(i)})", "more than 20 tool calls"),
    "parallel flood": (
        "await Promise.all(Array.from({length: 500}, (_, i) => tools.echo({text: String(i)})))",
        "more than 20 tool calls",
    ),
    "huge return": ("return 'x'.repeat(1e6)", "a message over 65536 bytes"),
    "huge arguments": ("return await tools.echo({text: 'x'.repeat(1e6)})", "a message over 65536 bytes"),
    "syntax error": ("return (", "SyntaxError"),
    "a script in a script": ("return await tools.run_code({code: 'return 1'})", "a script cannot call run_code"),
    "not JSON": ("return 10n", "cannot be sent as JSON"),
}


@pytest.fixture
def tools_module(tmp_path, monkeypatch):
    (tmp_path / "tests_code_tools.py").write_text(
        "from greenroom import tool\n\n"
        "@tool\ndef echo(text: str) -> str:\n    '''Echo text.'''\n    return text\n\n"
        "TOOLS = [echo]\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.parametrize("kind", list(HOSTILE))
async def test_hostile_code_ends_as_an_error_and_the_run_goes_on(kind, agent, tools_module, sandboxes) -> None:
    code, expected = HOSTILE[kind]
    turns = [{"tool_calls": [{"name": "run_code", "arguments": {"code": code}}]}, {"text": "moving on"}]
    rt, _ = await agent(turns, TOOLS + LIMITS)
    try:
        session = rt.session()
        outcome = await session.run("go")
    finally:
        await rt.aclose()
    result = next(m for m in session.messages if m.role == "tool")
    assert result.is_error, result.content
    assert expected in result.content
    assert outcome.stop_reason == "final" and outcome.text == "moving on"
    assert sandboxes() == []


async def test_a_flood_of_console_output_is_cut_to_its_bound(agent, tools_module) -> None:
    code = "for (let i = 0; i < 100000; i++) console.log('line', i, 'x'.repeat(100)); return 'finished'"
    turns = [{"tool_calls": [{"name": "run_code", "arguments": {"code": code}}]}, {"text": "ok"}]
    rt, _ = await agent(turns, TOOLS + LIMITS + "console_chars = 500\n")
    try:
        session = rt.session()
        await session.run("go")
    finally:
        await rt.aclose()
    result = next(m for m in session.messages if m.role == "tool")
    assert not result.is_error
    assert result.content.startswith("finished\n\nconsole:\nline 0 ")
    assert len(result.content) < 700 and "more characters of console output left out" in result.content
