"""The ``greenroom`` command line: plugins, config, inspect, run.

Plugins add subcommands through ``greenroom_cli_commands``. They are loaded only when a
command line needs them: a plugin's command (or an unknown name) loads them, the top-level
help lists their commands from what the last load recorded (``greenroom.cli.surface``),
and a core command never loads them. A plugin that fails to import or to add its commands
is reported on the ``plugins`` listing and skipped; ``--help`` and every other command
keep working.
"""

from greenroom.cli import commands  # noqa: F401  (registers the core commands on the app)
from greenroom.cli.app import add_plugin_commands, app, main

__all__ = ["add_plugin_commands", "app", "main"]
