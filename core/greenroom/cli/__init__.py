"""The ``greenroom`` command line: plugins, config, inspect, run.

Plugins add subcommands through ``greenroom_cli_commands``. Plugin discovery happens when
the CLI starts, but a plugin that fails to import or to add its commands is reported on
the ``plugins`` listing and skipped; ``--help`` and every other command keep working.
"""

from greenroom.cli import commands  # noqa: F401  (registers the core commands on the app)
from greenroom.cli.app import add_plugin_commands, app, main

__all__ = ["add_plugin_commands", "app", "main"]
