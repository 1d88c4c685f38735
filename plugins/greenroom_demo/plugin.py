"""The ``demo`` plugin: contributes the ``greenroom demo`` command, and nothing to any run."""

from __future__ import annotations

from typing import Any

from greenroom import Plugin, hookimpl


class DemoPlugin(Plugin):
    """``greenroom demo``: an offline agent with 191 tools finds and uses the few it needs."""

    name = "demo"

    @hookimpl
    def greenroom_cli_commands(self, app: Any) -> None:
        from greenroom_demo.cli import demo_cmd

        app.command("demo")(demo_cmd)
