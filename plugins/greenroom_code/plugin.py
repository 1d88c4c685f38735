"""The code-mode plugin's hooks: the ``run_code`` tool, and a check that Deno is there.

Opt-in: ``[plugins] enable = ["code-mode"]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from greenroom import ConfigError, Plugin, Tool, ToolGroup, ToolSet, hookimpl
from greenroom_code.config import CodeConfig
from greenroom_code.sandbox import DenoMissing, find_deno
from greenroom_code.tool import RunCode


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
    def greenroom_check_config(self, config: Any, runtime: Any) -> Iterable[ConfigError] | None:
        try:
            find_deno(self.config.deno)
        except DenoMissing as exc:
            return [ConfigError(str(exc), path="plugins.code-mode.deno" if self.config.deno else "plugins.code-mode")]
        return None
