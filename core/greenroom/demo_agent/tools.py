"""The demo's executable tools as greenroom tools, each tagged with its group."""

from __future__ import annotations

import sys
from pathlib import Path

from greenroom import tool

sys.path.insert(0, str(Path(__file__).resolve().parent))

from task_tools import TASK_TOOLS, TOOL_GROUPS

TOOLS = [tool(f, group=TOOL_GROUPS[f.__name__]) for f in TASK_TOOLS]
