"""The project's pluggy markers: ``hookspec`` declares a hook, ``hookimpl`` implements one.

A leaf: ``greenroom.hookspecs`` names the run's types, and the plugin host, which the run
holds, must not import it to know the project's name.
"""

from __future__ import annotations

import pluggy

PROJECT = "greenroom"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

__all__ = ["PROJECT", "hookimpl", "hookspec"]
