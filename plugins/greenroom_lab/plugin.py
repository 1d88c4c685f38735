"""The ``lab`` plugin: contributes ``greenroom eval`` and ``greenroom bench``, and nothing to any run."""

from __future__ import annotations

from typing import Any

from greenroom import Plugin, hookimpl


class LabPlugin(Plugin):
    """``greenroom eval`` and ``greenroom bench``: measurements of deferral and priors."""

    name = "lab"

    @hookimpl
    def greenroom_cli_commands(self, app: Any) -> None:
        from greenroom_lab.cli import EVAL_HELP, bench_app, eval_command  # typer and rich load only for the CLI

        app.add_typer(bench_app, name="bench")
        app.command("eval", help=EVAL_HELP)(eval_command)
