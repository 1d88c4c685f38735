"""Loading a config file: TOML, ``extends``, ``${ENV}``, validation, structuring.

Every error names the file that set the bad value, its dotted key path
(``plugins.<name>.rules[2].mode``) and what was expected. Each section is checked
against a JSON Schema (core's, or the plugin's) and then structured into frozen attrs
classes by one cattrs converter that rejects unknown keys.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import cattrs
import jsonschema
from jsonschema.exceptions import best_match

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


from greenroom.config.errors import ConfigError, ConfigErrors, UnsetVariableError
from greenroom.config.model import (
    CORE_TABLES,
    PLUGIN_META_KEYS,
    AgentConfig,
    PluginsConfig,
    RuntimeConfig,
    SessionConfig,
    SkillsConfig,
    ToolsConfig,
    converter,
    core_schema,
    dotted,
    find_origin,
)


def _record_origins(value: Any, path: str, file: str, origins: dict[str, str]) -> None:
    origins[path] = file
    if isinstance(value, dict):
        for k, v in value.items():
            _record_origins(v, f"{path}.{k}" if path else str(k), file, origins)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _record_origins(v, f"{path}[{i}]", file, origins)


def _clear_origins(path: str, origins: dict[str, str]) -> None:
    for key in [k for k in origins if k == path or k.startswith(path + ".") or k.startswith(path + "[")]:
        del origins[key]


def deep_merge(
    base: dict[str, Any], over: Mapping[str, Any], file: str, origins: dict[str, str], path: str = ""
) -> dict[str, Any]:
    """Tables merge key by key; lists and scalars replace."""
    out = dict(base)
    for k, v in over.items():
        sub = f"{path}.{k}" if path else str(k)
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            origins[sub] = file
            out[k] = deep_merge(out[k], v, file, origins, sub)
        else:
            _clear_origins(sub, origins)
            out[k] = copy.deepcopy(v)
            _record_origins(v, sub, file, origins)
    return out


# ------------------------------------------------------------------------ loading


def read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", file=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, column {column}; "
            "TOML files must be UTF-8 (save the file as UTF-8)",
            file=str(path),
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=str(path)) from None


def load_merged(path: str | Path, _chain: tuple[Path, ...] = ()) -> tuple[dict[str, Any], dict[str, str], list[Path]]:
    """Read a file and the files it extends; return the merged tables and key origins."""
    p = Path(path).resolve()
    if p in _chain:
        cycle = " -> ".join(str(c) for c in (*_chain, p))
        raise ConfigError(f"extends forms a cycle: {cycle}", file=str(p), path="extends")
    raw = read_toml(p)
    ext = raw.pop("extends", None)
    bases: list[str]
    if ext is None:
        bases = []
    elif isinstance(ext, str):
        bases = [ext]
    elif isinstance(ext, list) and all(isinstance(e, str) for e in ext):
        bases = ext
    else:
        raise ConfigError("expected a file name or a list of file names", file=str(p), path="extends")
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    files: list[Path] = []
    for i, b in enumerate(bases):
        target = p.parent / b
        if not target.exists():
            raise ConfigError(
                f"extends {b!r}, which does not exist ({target})",
                file=str(p),
                path="extends" if isinstance(ext, str) else f"extends[{i}]",
            )
        data, sub_origins, sub_files = load_merged(target, (*_chain, p))
        files.extend(sub_files)
        merged = deep_merge(merged, data, str(target), origins)
        origins.update(sub_origins)  # the base's own bases set some of those keys
    merged = deep_merge(merged, raw, str(p), origins)
    files.append(p)
    return merged, origins, files


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate(value: Any, origins: Mapping[str, str], path: str = "", env: Mapping[str, str] | None = None) -> Any:
    """Replace ``${VAR}`` (or ``${VAR:-default}``) in every string; a missing variable
    without a default is an error naming where it was used."""
    environ = os.environ if env is None else env
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            raise UnsetVariableError(
                f"environment variable {name} is not set", file=find_origin(origins, path), path=path
            )

        return _ENV.sub(sub, value)
    if isinstance(value, dict):
        return {k: interpolate(v, origins, f"{path}.{k}" if path else k, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, origins, f"{path}[{i}]", env) for i, v in enumerate(value)]
    return value


def schema_errors(data: Any, schema: Mapping[str, Any], prefix: str, origins: Mapping[str, str]) -> list[ConfigError]:
    """Every JSON Schema violation, as errors with dotted paths, in document order."""
    validator = jsonschema.Draft202012Validator(schema)
    out: list[ConfigError] = []
    for err in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        if err.validator == "anyOf" and any(e.relative_path for e in err.context):
            err = best_match([err])  # a value of the right kind, wrong inside: say where
        parts = [*([prefix] if prefix else []), *err.absolute_path]
        where = dotted(parts)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            allowed = set((err.schema.get("properties") or {}).keys())
            for extra in sorted(k for k in err.instance if k not in allowed):
                key_path = f"{where}.{extra}" if where else extra
                hint = f"; expected one of: {', '.join(sorted(allowed))}" if allowed else ""
                out.append(
                    ConfigError(f"unknown key {extra!r}{hint}", file=find_origin(origins, key_path), path=key_path)
                )
            continue
        out.append(ConfigError(_describe(err), file=find_origin(origins, where), path=where))
    return out


def _describe(err: jsonschema.ValidationError) -> str:
    v = err.validator
    if v == "type":
        return f"expected {_type_words(err.validator_value)}, got {_json_kind(err.instance)} {err.instance!r}"
    if v == "enum":
        return f"expected one of {', '.join(repr(x) for x in err.validator_value)}, got {err.instance!r}"
    if v == "required":
        return err.message.replace("is a required property", "is required")
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        sign = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[str(v)]
        kind = "an integer" if err.schema.get("type") == "integer" else "a number"
        return f"expected {kind} {sign} {err.validator_value}, got {err.instance!r}"
    if v == "anyOf":
        # one of a few kinds of value (true, or a list of globs; true, false or "never")
        kinds = [_kind_words(s) for s in err.validator_value]
        if all(kinds):
            return f"expected {' or '.join(kinds)}, got {_json_kind(err.instance)} {err.instance!r}"
    custom = err.schema.get("errorMessage") if isinstance(err.schema, Mapping) else None
    if isinstance(custom, str):
        # the ajv-errors convention: a schema says in words what its pattern means
        return f"{custom}, got {err.instance!r}"
    return err.message


def _kind_words(schema: Any) -> str:
    """What one alternative of an ``anyOf`` takes, in words ("" when it cannot say)."""
    if not isinstance(schema, Mapping):
        return ""
    if "enum" in schema:
        return " or ".join(json.dumps(x) for x in schema["enum"])
    return _type_words(schema["type"]) if "type" in schema else ""


def _type_words(t: Any) -> str:
    words = {
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "true or false",
        "array": "a list",
        "object": "a table",
        "null": "nothing",
    }
    if isinstance(t, list):
        return " or ".join(words.get(str(x), str(x)) for x in t)
    return words.get(t, str(t))


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "table"
    return type(value).__name__


def structure(data: Any, cls: type, *, prefix: str, origins: Mapping[str, str]) -> Any:
    """Structure validated data into a config class; cattrs errors keep their paths."""
    try:
        return converter.structure(data, cls)
    except cattrs.ClassValidationError as exc:
        errors = []
        for e, note in _flatten(exc):
            where = prefix + note
            errors.append(ConfigError(f"{type(e).__name__}: {e}", file=find_origin(origins, where), path=where))
        raise ConfigErrors(errors) from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc), file=find_origin(origins, prefix), path=prefix) from None


def _flatten(exc: BaseException, path: str = "") -> list[tuple[BaseException, str]]:
    if isinstance(exc, cattrs.ClassValidationError | cattrs.IterableValidationError):
        out: list[tuple[BaseException, str]] = []
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            if isinstance(note, cattrs.AttributeValidationNote):
                step = f".{note.name}"
            elif isinstance(note, cattrs.IterableValidationNote):
                step = f"[{note.index}]"
            else:
                step = ""
            out.extend(_flatten(sub, path + step))
        for sub in without:
            out.extend(_flatten(sub, path))
        return out
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return [(ValueError(f"unknown key(s) {', '.join(sorted(exc.extra_fields))}"), path)]
    # a validator of a whole list can say which item it rejects (``greenroom.run.policy``)
    return [(exc, path + getattr(exc, "config_path", ""))]


def load_config(
    path: str | Path,
    *,
    plugin_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    broken_plugins: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    plugin_tables: Mapping[str, Mapping[str, Any]] | None = None,
) -> RuntimeConfig:
    """Load, merge, interpolate and validate a config file.

    ``plugin_schemas`` maps installed plugin names to their section schemas; a section
    for a plugin not in it is an error. ``broken_plugins`` maps installed plugins that
    failed to load to their load error: they may be disabled, but neither enabled nor
    configured, and either is an error that quotes the load error. ``plugin_tables`` maps
    the top-level tables installed plugins own (``Plugin.config_table``) to their
    schemas: such a table is checked as a core one is, and any other unknown table is an
    error. Plugin sections are returned as plain tables in ``plugin_sections``, the
    plugins' own tables in ``tables`` (``greenroom.compose.build`` structures both into
    each plugin's config class).
    """
    merged, origins, files = load_merged(path)
    # [model] is read only when the model is built (``greenroom.compose.build``): a server
    # or an inspection never calls the model, and must not fail on its unset variables
    merged = {k: v if k == "model" else interpolate(v, origins, k, env) for k, v in merged.items()}
    schema = core_schema()
    schema["properties"].update({k: v for k, v in (plugin_tables or {}).items() if k not in CORE_TABLES})
    errors = schema_errors(merged, schema, "", origins)
    plugins_table = merged.get("plugins", {}) if isinstance(merged.get("plugins"), dict) else {}
    sections = {k: v for k, v in plugins_table.items() if k not in PLUGIN_META_KEYS}
    broken = broken_plugins or {}
    if plugin_schemas is not None:
        for name, section in sections.items():
            where = f"plugins.{name}"
            if broken and name in broken:
                errors.append(
                    ConfigError(
                        f"plugin {name!r} is installed but failed to load: {broken[name]}",
                        file=find_origin(origins, where),
                        path=where,
                    )
                )
                continue
            if name not in plugin_schemas:
                known = ", ".join(sorted(plugin_schemas)) or "none installed"
                errors.append(
                    ConfigError(
                        f"unknown plugin {name!r} (installed: {known})", file=find_origin(origins, where), path=where
                    )
                )
                continue
            errors.extend(schema_errors(section, plugin_schemas[name], where, origins))
        for key in ("enable", "disable"):
            for i, name in enumerate(plugins_table.get(key, []) or []):
                if not isinstance(name, str) or name in plugin_schemas or (key == "disable" and name in broken):
                    continue  # disabling a failed plugin is how a user keeps it off
                where = f"plugins.{key}[{i}]"
                if name in broken:
                    message = f"plugin {name!r} is installed but failed to load: {broken[name]}"
                else:
                    message = f"unknown plugin {name!r}"
                errors.append(ConfigError(message, file=find_origin(origins, where), path=where))
    if errors:
        raise ConfigErrors(errors)
    core = {k: v for k, v in merged.items() if k in ("agent", "tools", "session", "skills")}
    core["plugins"] = {k: v for k, v in plugins_table.items() if k in PLUGIN_META_KEYS}
    agent = structure(core.get("agent", {}), AgentConfig, prefix="agent", origins=origins)
    tools = structure(core.get("tools", {}), ToolsConfig, prefix="tools", origins=origins)
    plugins = structure(core["plugins"], PluginsConfig, prefix="plugins", origins=origins)
    session = structure(core.get("session", {}), SessionConfig, prefix="session", origins=origins)
    skills = structure(core.get("skills", {}), SkillsConfig, prefix="skills", origins=origins)
    return RuntimeConfig(
        agent=agent,
        model=dict(merged.get("model", {})),
        tools=tools,
        plugins=plugins,
        session=session,
        skills=skills,
        plugin_sections=sections,
        tables={k: dict(merged[k]) for k in plugin_tables or () if isinstance(merged.get(k), dict)},
        base_dir=str(Path(path).resolve().parent),
        files=tuple(str(f) for f in files),
        origins=origins,
    )


def merged_document(path: str | Path) -> dict[str, Any]:
    """The merged tables of a file and its bases, before interpolation (``config show``)."""
    merged, _, _ = load_merged(path)
    return merged


def structure_plugin_config(
    name: str, cls: type, section: Mapping[str, Any], origins: Mapping[str, str], *, table: str | None = None
) -> Any:
    """A plugin's section structured into its config class; errors name its key
    (``plugins.NAME``, or the top-level ``table`` it owns)."""
    return structure(dict(section), cls, prefix=table or f"plugins.{name}", origins=origins)
