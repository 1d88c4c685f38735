"""The configuration reference, generated from the JSON Schemas (``docs/config.md``).

``greenroom config reference`` prints it; a test keeps the committed copy current, so
the reference can never drift from the code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from greenroom.config import core_schema
from greenroom.plugins.discovery import PluginRecord


def _type(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return " \\| ".join(json.dumps(v) for v in schema["enum"])
    t = schema.get("type")
    if isinstance(t, list):
        return " or ".join(str(x) for x in t)
    if t == "array" and isinstance(schema.get("items"), Mapping):
        return f"list of {_type(schema['items'])}"
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    return str(t or "any")


def _rows(schema: Mapping[str, Any], prefix: str) -> Iterable[str]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    for key, sub in props.items():
        path = f"{prefix}.{key}" if prefix else key
        default = (
            "required" if key in required else (f"`{json.dumps(sub['default'])}`" if "default" in sub else "unset")
        )
        desc = " ".join(str(sub.get("description", "")).split())
        yield f"| `{path}` | {_type(sub)} | {default} | {desc} |"
        if sub.get("type") == "object" and sub.get("properties"):
            yield from _rows(sub, path)
        items = sub.get("items")
        if isinstance(items, Mapping) and items.get("properties"):
            yield from _rows(items, f"{path}[]")


def _table(title: str, schema: Mapping[str, Any], prefix: str, note: str = "") -> list[str]:
    lines = [f"## {title}", ""]
    if note:
        lines += [note, ""]
    rows = list(_rows(schema, prefix))
    if not rows:
        return [*lines, "No options.", ""]
    return [*lines, "| key | type | default | meaning |", "| --- | --- | --- | --- |", *rows, ""]


def render_reference(records: Iterable[PluginRecord]) -> str:
    core = core_schema()
    lines = [
        "# Configuration reference",
        "",
        "Generated from the JSON Schemas by `greenroom config reference`; do not edit by hand.",
        'A file may `extends = "base.toml"` (or a list): tables merge key by key, lists and',
        "scalars replace. Strings may use `${VAR}` or `${VAR:-default}` from the environment.",
        "",
    ]
    lines += _table("[agent]", core["properties"]["agent"], "agent")
    lines += _table("[tools]", core["properties"]["tools"], "tools")
    lines += _table(
        "[plugins]",
        {"properties": core["properties"]["plugins"]["properties"]},
        "plugins",
        "Each installed plugin also reads its own `[plugins.<name>]` section, below.",
    )
    lines += _table("[session]", core["properties"]["session"], "session")
    lines += _table("[skills]", core["properties"]["skills"], "skills")
    lines += ["## [model]", "", "Free-form options passed to the model provider (see docs/providers.md).", ""]
    for r in sorted(records, key=lambda r: r.name):
        if r.cls is None:
            continue
        doc = (r.cls.__doc__ or "").strip().splitlines()
        note = f"Plugin `{r.name}` ({r.distribution}). {doc[0] if doc else ''}".strip()
        if r.cls.config_table:
            lines += _own_table(r.cls.config_table, r.cls.config_schema(), note)
        else:
            lines += _table(f"[plugins.{r.name}]", r.cls.config_schema(), f"plugins.{r.name}", note)
    return "\n".join(lines).rstrip() + "\n"


def _own_table(table: str, schema: Mapping[str, Any], note: str) -> list[str]:
    """A top-level table a plugin owns: its plain keys, then each sub-table on its own."""
    props = schema.get("properties") or {}
    subs = {k: v for k, v in props.items() if v.get("properties") and "object" in str(v.get("type"))}
    lines = _table(f"[{table}]", {"properties": {k: v for k, v in props.items() if k not in subs}}, table, note)
    for key, sub in subs.items():
        lines += _table(f"[{table}.{key}]", sub, f"{table}.{key}", " ".join(str(sub.get("description", "")).split()))
    return lines
