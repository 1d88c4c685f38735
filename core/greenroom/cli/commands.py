"""Imports every core command module, so each registers its commands on the app."""

from greenroom.cli import bench_cmd, config_cmd, demo_cmd, plugins_cmd, run_cmd

__all__ = ["bench_cmd", "config_cmd", "demo_cmd", "plugins_cmd", "run_cmd"]
