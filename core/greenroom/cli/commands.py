"""Imports every core command module, so each registers its commands on the app."""

from greenroom.cli import config_cmd, mcp_cmd, plugins_cmd, run_cmd

__all__ = ["config_cmd", "mcp_cmd", "plugins_cmd", "run_cmd"]
