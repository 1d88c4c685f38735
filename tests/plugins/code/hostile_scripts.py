"""Hostile scripts, each with what its error result says (read by the tests with runpy,
so the scripted-model tests and the gateway's test run the same table), and the echo tool
they call."""

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

ECHO_TOOLS = """from greenroom import tool


@tool
def echo(text: str) -> str:
    \"\"\"Echo text.\"\"\"
    return text


TOOLS = [echo]
"""
"""A tools file (``echo_tools.py:TOOLS``) with the one tool the scripts call."""
