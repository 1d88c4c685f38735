"""The plugin host: the plugin contract and discovery, the pluggy manager, how each
implementation is called, and what a plugin class must satisfy."""
