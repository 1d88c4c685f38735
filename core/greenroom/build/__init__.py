"""Building a runtime from a config file: its tool sources, its plugins and model, and checking a config without running it."""
