"""Every Python block in the docs and the README runs as a reader would run it.

A block preceded by ``<!-- snippet: PATH -->`` quotes a file of the repository (checked
to match it in tests/core/test_docs.py; the file itself runs in its own tests), and one
preceded by ``<!-- provider example: ... -->`` is written out and imported by
tests/core/providers/test_writing_a_provider.py. Every other block runs here, in a fresh
process, in a folder holding ``agent.toml`` (the offline demo agent) and ``examples/``,
with a top-level ``await`` allowed as in an async REPL, and must finish without error.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.gr_testutil import ROOT

BLOCK = re.compile(r"(?:<!-- (?P<mark>[^>]*?) -->\n)?```python\n(?P<body>.*?)```", re.S)
QUOTED = ("snippet:", "provider example:")

RUNNER = """
import ast, asyncio, sys
source = sys.stdin.read()
code = compile(source, "<doc block>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


def blocks() -> list[tuple[str, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            if (m.group("mark") or "").startswith(QUOTED):
                continue
            line = text[: m.start("body")].count("\n") + 1
            found.append((f"{page.relative_to(ROOT)}:{line}", m.group("body")))
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("where", "body"), blocks(), ids=[w for w, _ in blocks()])
def test_the_block_runs(where: str, body: str, tmp_path: Path) -> None:
    (tmp_path / "agent.toml").write_text(f'extends = "{(ROOT / "examples" / "demo" / "demo.toml").as_posix()}"\n')
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=body,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "GREENROOM_HOME": str(tmp_path / "home")},
        timeout=120,
    )
    assert done.returncode == 0, f"{where} does not run:\n{done.stderr[-3000:]}"


def test_every_page_with_python_has_a_block_found_here() -> None:
    counted = {where.split(":")[0] for where, _ in blocks()}
    assert {"README.md", "docs/python.md", "docs/mcp.md"} <= counted
