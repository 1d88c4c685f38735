"""What the config schema cannot say about ``[[tools.mcp]]``, checked before anything starts.

Used by ``greenroom config check`` and by every build; it needs no MCP SDK, so a config
can be checked where the ``mcp`` extra is not installed.
"""

from __future__ import annotations

from greenroom.config import ConfigError, ConfigErrors, RuntimeConfig


def check_mcp(cfg: RuntimeConfig) -> None:
    """Exactly one of command and url, an http(s) url with a host, and a unique non-empty
    name (it becomes the group id and the tool prefix). Every bad server is reported at
    once, as ``ConfigErrors``."""
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
        if server.oauth is not None and server.command:
            errors.append(
                ConfigError(
                    f"server {server.name!r}: oauth signs in to an HTTP server ('url'); a stdio server "
                    "takes its credentials from its env table",
                    file=cfg.origin(f"{where}.oauth"),
                    path=f"{where}.oauth",
                )
            )
        if server.url and not server.command:
            problem = url_problem(server.url)
            if problem:
                errors.append(
                    ConfigError(
                        f"server {server.name!r}: {problem}", file=cfg.origin(f"{where}.url"), path=f"{where}.url"
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


def url_problem(url: str) -> str | None:
    """What is wrong with a server's ``url`` (None when it is an http(s) URL with a host)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as exc:
        return f"url {url!r} is not a URL ({exc})"
    if parts.scheme in ("ws", "wss"):
        return (
            f"url {url!r}: WebSocket servers are not supported; "
            "give the server's streamable-HTTP endpoint (http:// or https://)"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"url {url!r} must be an http:// or https:// URL with a host, such as https://mcp.example.com/mcp"
    return None


__all__ = ["check_mcp", "url_problem"]
