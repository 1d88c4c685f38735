"""Configuration: one TOML file (and the files it extends) composes a runtime.

``errors`` says what was wrong and where, ``model`` holds the frozen attrs classes and
the converter, ``loading`` reads, merges, validates and structures a file, ``reference``
renders the Markdown reference from every schema.
"""

from greenroom.config.errors import ConfigError, ConfigErrors
from greenroom.config.loading import load_config, merged_document, structure, structure_plugin_config
from greenroom.config.model import (
    AgentConfig,
    GroupConfig,
    McpServerConfig,
    PluginsConfig,
    RuntimeConfig,
    SessionConfig,
    ToolsConfig,
    converter,
    core_schema,
)

__all__ = [
    "AgentConfig",
    "ConfigError",
    "ConfigErrors",
    "GroupConfig",
    "McpServerConfig",
    "PluginsConfig",
    "RuntimeConfig",
    "SessionConfig",
    "ToolsConfig",
    "converter",
    "core_schema",
    "load_config",
    "merged_document",
    "structure",
    "structure_plugin_config",
]
