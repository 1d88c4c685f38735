"""Configuration: one TOML file (and the files it extends) composes a runtime.

``errors`` says what was wrong and where, ``model`` holds the frozen attrs classes and
the converter, ``loading`` reads, merges, validates and structures a file, ``reference``
renders the Markdown reference from every schema. Names load on first use: a command
that only needs ``ConfigError`` does not pay for jsonschema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenroom._support.lazy import lazy_exports

if TYPE_CHECKING:
    from greenroom.config.errors import ConfigError, ConfigErrors
    from greenroom.config.loading import load_config, merged_document, structure, structure_plugin_config
    from greenroom.config.model import (
        AgentConfig,
        GroupConfig,
        McpServerConfig,
        PluginsConfig,
        ResultsConfig,
        RuntimeConfig,
        SessionConfig,
        SkillsConfig,
        ToolsConfig,
        converter,
        core_schema,
    )

_EXPORTS: dict[str, str] = {
    "ConfigError": "greenroom.config.errors",
    "ConfigErrors": "greenroom.config.errors",
    "load_config": "greenroom.config.loading",
    "merged_document": "greenroom.config.loading",
    "structure": "greenroom.config.loading",
    "structure_plugin_config": "greenroom.config.loading",
    "AgentConfig": "greenroom.config.model",
    "GroupConfig": "greenroom.config.model",
    "McpServerConfig": "greenroom.config.model",
    "PluginsConfig": "greenroom.config.model",
    "ResultsConfig": "greenroom.config.model",
    "RuntimeConfig": "greenroom.config.model",
    "SessionConfig": "greenroom.config.model",
    "SkillsConfig": "greenroom.config.model",
    "ToolsConfig": "greenroom.config.model",
    "converter": "greenroom.config.model",
    "core_schema": "greenroom.config.model",
}

__all__ = [
    "AgentConfig",
    "ConfigError",
    "ConfigErrors",
    "GroupConfig",
    "McpServerConfig",
    "PluginsConfig",
    "ResultsConfig",
    "RuntimeConfig",
    "SessionConfig",
    "SkillsConfig",
    "ToolsConfig",
    "converter",
    "core_schema",
    "load_config",
    "merged_document",
    "structure",
    "structure_plugin_config",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
