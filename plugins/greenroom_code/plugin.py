"""The code-mode plugin's hooks.

- Contributions: the ``run_code`` tool; ``greenroom config check`` says whether Deno is there.
- RunStart: the run's ``Scripting`` names ``run_code``, so a tool search answers with the
  signatures a script calls (deferred-tools does) and its listing says so.

Opt-in: ``[plugins] enable = ["code-mode"]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from greenroom import ConfigError, Plugin, RunContext, Scripting, Tool, ToolGroup, ToolSet, hookimpl
from greenroom_code.config import CodeConfig
from greenroom_code.sandbox import DenoMissing, find_deno
from greenroom_code.tool import RUN_CODE, RunCode


class CodeModePlugin(Plugin):
    """Lets the model write one script that calls its tools, instead of one call per step."""

    name = "code-mode"
    config_class = CodeConfig
    default_enabled = False
    nonblocking = True
    """Its hooks compute and never wait."""

    config: CodeConfig

    @hookimpl
    def greenroom_tools(self, tools: ToolSet, groups: Mapping[str, ToolGroup]) -> Iterable[Tool]:
        return [RunCode(self.config)]

    @hookimpl
    def greenroom_run_start(self, ctx: RunContext) -> None:
        ctx.state[Scripting].tool = RUN_CODE

    @hookimpl
    def greenroom_check_config(self, config: Any, runtime: Any) -> Iterable[ConfigError] | None:
        try:
            find_deno(self.config.deno)
        except DenoMissing as exc:
            return [ConfigError(str(exc), path="plugins.code-mode.deno" if self.config.deno else "plugins.code-mode")]
        return None
