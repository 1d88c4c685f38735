"""code-mode: the model writes one JavaScript function that calls its tools, run in a sandbox
(Deno with no permissions), instead of one tool call per step; only what it returns enters
the conversation (docs/code-mode.md).

Registered through the ``greenroom.plugins`` entry point as ``code-mode``; opt-in.
"""

from greenroom_code.config import CodeConfig
from greenroom_code.plugin import CodeModePlugin
from greenroom_code.tool import RUN_CODE

__all__ = ["RUN_CODE", "CodeConfig", "CodeModePlugin"]
