"""The demo's executable tools as greenroom tools, each tagged with its group."""

from __future__ import annotations

from greenroom import tool
from greenroom_demo.agent.task_tools import TASK_TOOLS, TOOL_GROUPS

TOOLS = [tool(f, group=TOOL_GROUPS[f.__name__]) for f in TASK_TOOLS]
