"""What the config schema cannot say about ``[[tools.mcp]]``, checked before anything starts.

Used by ``greenroom config check`` and by every build; it needs no MCP SDK, so a config
can be checked where the ``mcp`` extra is not installed.
"""

from __future__ import annotations

from greenroom.config import ConfigError, ConfigErrors, RuntimeConfig


def check_mcp(cfg: RuntimeConfig) -> None:
    """Exactly one of command and url, and a unique non-empty name (it becomes the group
    id and the tool prefix). Every bad server is reported at once, as ``ConfigErrors``."""
    errors: list[ConfigError] = []
    seen: dict[str, int] = {}
    for i, server in enumerate(cfg.tools.mcp):
        where = f"tools.mcp[{i}]"
        if server.command and server.url:
            errors.append(
                ConfigError(
                    f"server {server.name!r} sets both 'command' (stdio) and 'url' (HTTP); keep one",
                    file=cfg.origin(f"{where}.url"),
                    path=f"{where}.url",
                )
            )
        elif not server.command and not server.url:
            errors.append(
                ConfigError(
                    f"server {server.name!r} needs 'command' (a stdio server) or 'url' (a streamable-HTTP server)",
                    file=cfg.origin(where),
                    path=where,
                )
            )
        if not server.name.strip():
            errors.append(ConfigError("must not be empty", file=cfg.origin(f"{where}.name"), path=f"{where}.name"))
        elif server.name in seen:
            errors.append(
                ConfigError(
                    f"another MCP server is already named {server.name!r} (tools.mcp[{seen[server.name]}])",
                    file=cfg.origin(f"{where}.name"),
                    path=f"{where}.name",
                )
            )
        else:
            seen[server.name] = i
    if errors:
        raise ConfigErrors(errors)


__all__ = ["check_mcp"]
