"""The ``gateway`` plugin: contributes ``greenroom serve``, owns ``[serve]``, declares
``greenroom_serve_request``, and adds nothing to any run."""

from __future__ import annotations

from types import ModuleType
from typing import Any, ClassVar

import greenroom_gateway.hookspecs
from greenroom import Plugin, hookimpl
from greenroom_gateway.config import ServeConfig


class GatewayPlugin(Plugin):
    """`greenroom serve`: a config's tools as one MCP server; its flags win over these keys (docs/serve.md)."""

    name = "gateway"
    config_class = ServeConfig
    config_table = "serve"
    hookspecs: ClassVar[ModuleType | type | None] = greenroom_gateway.hookspecs

    @hookimpl
    def greenroom_cli_commands(self, app: Any) -> None:
        from greenroom_gateway.cli import serve_cmd  # typer options load only for the CLI

        app.command("serve")(serve_cmd)
