"""The names the priors plugin, its CLI and its stores agree on.

Kept apart from the plugin so the CLI and the stores can use them without importing the
plugin module (which imports the CLI to contribute its commands).
"""

from __future__ import annotations

NAME = "priors-persistence"
"""The plugin's entry-point name and its config section, ``[plugins.priors-persistence]``."""

KEY = "tool_priors"
"""The document key of an agent's priors in a profile store."""

STORE_KEY = f"plugins.{NAME}.store"
"""The dotted config key that sets the store URL; relative paths resolve against the
folder of the file that set it."""
