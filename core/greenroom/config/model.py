"""The configuration's shape: frozen attrs classes for every core section, the one
cattrs converter, and the JSON Schema of everything that is not a plugin section."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs
import cattrs

from greenroom.run.policy import ToolPolicy, _globs
from greenroom.tools.schema.from_types import schema_for_attrs

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass


def dotted(path: Sequence[Any]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def find_origin(origins: Mapping[str, str], path: str) -> str | None:
    """The file that set ``path`` (or its closest ancestor)."""
    probe = path
    while probe:
        if probe in origins:
            return origins[probe]
        cut = max(probe.rfind("."), probe.rfind("["))
        probe = probe[:cut] if cut > 0 else ""
    return origins.get("")


@attrs.frozen
class AgentConfig:
    """The agent: who it is, which model drives it, and its limits.

    Args:
        id: Stable agent id; learned priors are kept per agent id.
        model: Model reference ``provider:name`` (``scripted``, ``scripted:script.jsonl``,
            ``openai:gpt-4o-mini``, ``anthropic:claude-sonnet-4-5``).
        system_prompt: The base system prompt.
        max_steps: Model calls allowed per run.
        tool_timeout: Default seconds a tool call may take.
        max_concurrency: Tool calls run at once within one step.
        max_result_tokens: Tokens one tool result may hold; a larger result is cut to
            its head and tail with a note saying what was left out. 25,000 (Claude
            Code's default bound on an MCP tool's output) fits a long file or a page of
            logs and leaves most of a 128k-200k context to the conversation.
        max_input_tokens: Tokens a user input may hold; a larger input ends the run with
            an error before the model is called. 200,000: the context of the larger
            models, so only an input no model could take is refused.
    """

    id: str = "agent"
    model: str = "scripted"
    system_prompt: str = "You are a helpful assistant. Use tools when they help."
    max_steps: int = attrs.field(default=20, validator=attrs.validators.ge(1))
    tool_timeout: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))
    max_concurrency: int = attrs.field(default=8, validator=attrs.validators.ge(1))
    max_result_tokens: int = attrs.field(default=25_000, validator=attrs.validators.ge(1))
    max_input_tokens: int = attrs.field(default=200_000, validator=attrs.validators.ge(1))


@attrs.frozen
class McpOAuthConfig:
    """OAuth 2.1 for one streamable-HTTP server: greenroom as the client (authorization
    code with PKCE); ``greenroom mcp login CONFIG NAME`` signs in, tokens are kept and
    refreshed in greenroom's state folder (0600). Secrets come from the environment only.

    Args:
        client_id: A client registered with the authorization server beforehand; unset,
            greenroom registers itself (dynamic registration) or uses ``client_metadata_url``.
        client_secret_env: The environment variable that holds the pre-registered client's
            secret (never the secret itself). With it, ``--headless`` login uses the
            client-credentials grant.
        client_metadata_url: An https URL of greenroom's client ID metadata document, used
            as the client id where the authorization server supports that.
        scopes: Scopes to ask for (default: what the server's metadata names).
        redirect_port: Loopback port for the redirect (``http://127.0.0.1:PORT/callback``);
            0 picks a free port at each login. A pre-registered client usually needs a fixed one.
    """

    client_id: str | None = None
    client_secret_env: str | None = None
    client_metadata_url: str | None = None
    scopes: tuple[str, ...] = ()
    redirect_port: int = attrs.field(default=0, validator=[attrs.validators.ge(0), attrs.validators.le(65535)])


def _flag_or_globs(value: bool | Sequence[str]) -> bool | tuple[str, ...]:
    return value if isinstance(value, bool) else tuple(value)


def _hint_globs(instance: Any, attribute: Any, value: bool | tuple[str, ...]) -> None:
    if not isinstance(value, bool):
        _globs(instance, attribute, value)


@attrs.frozen
class McpServerConfig:
    """One MCP server (stdio with ``command``, or streamable HTTP with ``url``).

    Args:
        name: Server name; tools are named ``<name>__<tool>`` unless naming says otherwise.
        command: Executable for a stdio server.
        args: Arguments for the command.
        env: Environment for the server process (values may use ``${VAR}``).
        url: Endpoint of a streamable-HTTP server.
        headers: HTTP headers (values may use ``${VAR}``).
        naming: ``prefixed`` (server__tool) or ``bare`` (the tool's own name when unambiguous).
        description: One line describing the server's group.
        defer: Whether the server's tools start deferred as one group; ``"never"``: its
            tools are normal tools and start eager, as with ``always_load = true``
            (Copilot CLI's ``deferTools: "never"``).
        always_load: Its tools that start eager: ``true`` (all of them) or globs on the
            names the server lists them by (Claude Code's per-server ``alwaysLoad``). An
            eager hint, as a tool's ``_meta["anthropic/alwaysLoad"]`` is: the
            user's placement rules may still defer a tool it names.
        start: ``lazy`` (when first needed) or ``eager`` (when the runtime starts).
        timeout: Seconds for one tool call.
        connect_timeout: Seconds to start the server and list its tools.
        max_concurrency: Calls greenroom sends the server at once; more wait for a
            free slot, within their timeout, then fail naming the limit.
        oauth: Sign in with OAuth 2.1 (an HTTP server only; ``oauth = {}`` for the defaults).
            A server with stored tokens from ``greenroom mcp login`` uses them without it.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = attrs.field(factory=dict)
    url: str | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    naming: Literal["prefixed", "bare"] = "prefixed"
    description: str | None = None
    defer: bool | Literal["never"] = True
    always_load: bool | tuple[str, ...] = attrs.field(default=False, converter=_flag_or_globs, validator=_hint_globs)
    start: Literal["lazy", "eager"] = "lazy"
    timeout: float = attrs.field(default=30.0, validator=attrs.validators.gt(0))
    connect_timeout: float = attrs.field(default=30.0, validator=attrs.validators.gt(0))
    max_concurrency: int = attrs.field(default=32, validator=attrs.validators.ge(1))
    oauth: McpOAuthConfig | None = None


@attrs.frozen
class GroupConfig:
    """A group of tools loaded on demand by a Python loader.

    Args:
        id: Group id the model uses to load the group (e.g. ``billing``).
        loader: Import reference ``package.module:function`` (or ``file.py:function``); the
            function (sync or async) returns the group's tools.
        name: Display name (default: the id).
        description: One line for the catalog.
        tools: Tool names for the catalog before the loader has run (optional).
        catalog: A JSON/JSONL catalog with the tools' descriptors, so search can find them
            before loading (optional; relative to the config).
        defer: Whether the group's tools start deferred.
    """

    id: str
    loader: str
    name: str | None = None
    description: str = ""
    tools: tuple[str, ...] = ()
    catalog: str | None = None
    defer: bool = True


@attrs.frozen
class ResultsConfig:
    """What becomes of tool results on their way to the model (docs/concepts.md, "Results").

    Args:
        compact: JSON results are sent minified, without the fields whose value is
            null, ``""``, ``[]`` or ``{}`` (``false``, ``0`` and every other value stay).
        verbatim: Globs of the tools whose results are sent as the tool gave them.
    """

    compact: bool = True
    verbatim: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=_globs)


@attrs.frozen
class ToolsConfig:
    """Where the agent's tools come from.

    Args:
        python: Import references ``package.module:attr`` naming a tool, a list of tools,
            or a function to wrap as a tool.
        catalogs: JSON or JSONL catalog files (descriptor-only tools), relative to the config.
        mcp: MCP servers.
        groups: Tool groups behind Python loaders.
        policy: Which of these tools the agent may use (``allow``/``deny`` globs on
            the names the model sees); applied to every source, see docs/security.md.
        results: What becomes of their results (compaction).
    """

    python: tuple[str, ...] = ()
    catalogs: tuple[str, ...] = ()
    mcp: tuple[McpServerConfig, ...] = ()
    groups: tuple[GroupConfig, ...] = ()
    policy: ToolPolicy = attrs.field(factory=ToolPolicy)
    results: ResultsConfig = ResultsConfig()


@attrs.frozen
class PluginsConfig:
    """Which plugins run.

    Args:
        enable: Plugins to turn on (needed for opt-in plugins, and for all plugins when
            GREENROOM_DISABLE_PLUGIN_AUTOLOAD is set).
        disable: Plugins to turn off.
    """

    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()


@attrs.frozen
class SessionConfig:
    """Session persistence.

    A session file is held by one run at a time (a second ``greenroom run --session`` on
    it waits ``--wait`` seconds, then fails naming the holder's pid), is refused when it
    belongs to another agent id (``--take-over`` continues it as this agent), and is
    written atomically, readable by its owner only (0600).

    Args:
        dir: Folder where a bare ``--session NAME`` (a file name with no folder in it)
            is kept; relative to the config file that sets it. Unset, ``NAME`` is
            relative to the current directory, as is any path with a folder in it.
    """

    dir: str | None = None


@attrs.frozen
class SkillsConfig:
    """Skills from folders on disk (the Agent Skills layout that MCP's Skills extension,
    SEP-2640, serves): loaded by the agent when a task needs them, offered to MCP clients
    by ``greenroom serve`` (docs/mcp.md, docs/serve.md).

    Args:
        folders: Folders of skills, relative to the config file that names them: each
            sub-folder holding a SKILL.md whose front matter has ``name`` (the
            sub-folder's name) and ``description`` is a skill, and its other files are
            the skill's files.
    """

    folders: tuple[str, ...] = ()


@attrs.frozen
class RuntimeConfig:
    """A whole composed runtime (plugin sections are kept by plugin name; the top-level
    tables plugins own, such as ``[serve]``, by table name in ``tables``)."""

    agent: AgentConfig = AgentConfig()
    model: dict[str, Any] = attrs.field(factory=dict)
    tools: ToolsConfig = ToolsConfig()
    plugins: PluginsConfig = PluginsConfig()
    session: SessionConfig = SessionConfig()
    skills: SkillsConfig = SkillsConfig()
    plugin_sections: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    tables: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    base_dir: str = "."
    files: tuple[str, ...] = ()
    origins: dict[str, str] = attrs.field(factory=dict, eq=False, repr=False)

    def origin(self, path: str) -> str | None:
        return find_origin(self.origins, path)

    def dir_of(self, path: str) -> Path:
        """The folder relative paths at ``path`` resolve against: that of the file that set
        the value (a base config's paths keep working when another file extends it)."""
        origin = self.origin(path)
        return Path(origin).parent if origin else Path(self.base_dir)


def make_converter() -> cattrs.Converter:
    """The one converter: unknown keys are errors, tuples come from lists."""
    conv = cattrs.Converter(forbid_extra_keys=True)
    # a flag, or globs or a word: the JSON Schema has checked which before this runs, and
    # the field's converter makes globs a tuple
    for union in (bool | tuple[str, ...], bool | Literal["never"]):
        conv.register_structure_hook(union, lambda v, _: v)
    return conv


converter = make_converter()

PLUGIN_META_KEYS = ("enable", "disable")


# The attrs classes' bounds reach the schema from their validators (schema_for_attrs), so a
# file hears about one at its key (agent.tool_timeout). [model] is no attrs class: its two
# shared keys say theirs here.
_POSITIVE: dict[str, Any] = {"exclusiveMinimum": 0}
MODEL_KEYS: dict[str, dict[str, Any]] = {
    # every provider reads these two; the rest of [model] is the provider's to check
    "timeout": {"type": "number", **_POSITIVE, "description": "Seconds one model call may take."},
    "api_key_env": {"type": "string", "description": "The environment variable that holds the API key."},
}


CORE_TABLES = ("extends", "agent", "model", "tools", "plugins", "session", "skills")
"""The top-level keys core reads; a plugin may own any other table (``Plugin.config_table``)."""


def core_schema() -> dict[str, Any]:
    """The JSON Schema of everything in a config file that is not a plugin section."""
    tools = schema_for_attrs(ToolsConfig)
    return {
        "type": "object",
        "properties": {
            "extends": {
                "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                "description": "Base config file(s), relative to this file.",
            },
            "agent": schema_for_attrs(AgentConfig),
            "model": {
                "type": "object",
                "properties": {k: dict(v) for k, v in MODEL_KEYS.items()},
                "description": "Options passed to the model provider.",
            },
            "tools": tools,
            "plugins": {
                "type": "object",
                "properties": schema_for_attrs(PluginsConfig)["properties"],
                "additionalProperties": {"type": "object"},
            },
            "session": schema_for_attrs(SessionConfig),
            "skills": schema_for_attrs(SkillsConfig),
        },
        "additionalProperties": False,
    }
