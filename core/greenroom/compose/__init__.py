"""Building a runtime from a config file: its tool sources, its plugins and its model,
and checking a config without running it."""
