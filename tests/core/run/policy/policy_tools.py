"""Tools for the policy matrix: each source has a tool the agent may use (``*_read``) and
one the policy hides (``*_delete_all``, whose description carries ``MARKER``). Every
execution is written to the file ``POLICY_MARKS`` names, so a test sees what ran, in this
process or in the MCP server's."""

from __future__ import annotations

import os

from greenroom import tool

MARKER = "XYZZY-SECRET"


def mark(name: str) -> None:
    with open(os.environ["POLICY_MARKS"], "a", encoding="utf-8") as f:
        f.write(name + "\n")


@tool(description="Read a record by query (python).")
def py_read(q: str) -> str:
    mark("py_read")
    return f"read {q}"


@tool(description=f"Delete all records {MARKER} (python).")
def py_delete_all(q: str) -> str:
    mark("py_delete_all")
    return "deleted"


@tool(description="Read a record by query (group).")
def grp_read(q: str) -> str:
    mark("grp_read")
    return f"read {q}"


@tool(description=f"Delete all records {MARKER} (group).")
def grp_delete_all(q: str) -> str:
    mark("grp_delete_all")
    return "deleted"


PYTHON_TOOLS = [py_read, py_delete_all]


def load_group() -> list[object]:
    mark("load grp")
    return [grp_read, grp_delete_all]
