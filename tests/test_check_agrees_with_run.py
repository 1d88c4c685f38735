"""``greenroom config check`` and ``greenroom run`` judge every tool schema alike: a tool
the check reports is one the run finds unusable when it loads, and the other way round,
for every schema of the real catalogs (as a catalog file and as an MCP server's listing)
and for each kind of schema the two once judged apart (what only the dialect's
meta-schema rejects: the check said no, the run said yes until the tool's first call)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.gr_testutil import DATASETS

from greenroom.compose.build import build_runtime
from greenroom.compose.check import check_config
from greenroom.compose.findings import Level

needs_datasets = pytest.mark.skipif(not DATASETS.exists(), reason="../shared/datasets not present")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def dataset_tools() -> list[dict[str, Any]]:
    """Every tool of every dataset, each name once, as a catalog record."""
    seen: set[str] = set()
    out = []
    for source in ("github_mcp", "metatool", "seal_tools"):
        for line in (DATASETS / source / "tools.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else None
            if record is None or record["name"] in seen:
                continue
            seen.add(record["name"])
            out.append({"name": record["name"], "description": record.get("description") or "", **_schema(record)})
    return out


def _schema(record: dict[str, Any]) -> dict[str, Any]:
    return {"parameters": record["parameters"]} if record.get("parameters") else {}


def reported(path: Path, level: Level) -> set[str]:
    """The tools ``config check`` reports at ``level``, by the name it quotes."""
    report = check_config(path)
    names = set()
    for finding in report.findings.at(level):
        if "has an invalid parameters schema" in finding.message:
            names.add(finding.message.split("tool ", 1)[1].split("'", 2)[1])
    return names


def unusable_in_a_run(path: Path) -> set[str]:
    rt = build_runtime(path)
    try:
        return set(rt.tools.unusable)
    finally:
        anyio.run(rt.aclose)


@needs_datasets
def test_a_catalog_file(tmp_path: Path) -> None:
    tools = dataset_tools()
    (tmp_path / "catalog.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools), encoding="utf-8")
    config = tmp_path / "agent.toml"
    config.write_text('[agent]\nmodel = "scripted"\n\n[tools]\ncatalogs = ["catalog.jsonl"]\n', encoding="utf-8")
    checked = reported(config, Level.ERROR)
    assert checked == unusable_in_a_run(config)
    assert checked  # the datasets hold schemas their dialect's meta-schema rejects
    assert len(checked) < len(tools) / 100


@needs_datasets
def test_an_mcp_servers_cached_listing(tmp_path: Path) -> None:
    pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")
    from greenroom.config import McpServerConfig
    from greenroom.mcp import McpListing, McpToolSpec, write_cached_listing
    from greenroom.mcp.naming import prefixed_name

    server = McpServerConfig(name="data", command="never-started")
    specs = tuple(
        McpToolSpec(t["name"], t["description"], t.get("parameters") or {"type": "object"}) for t in dataset_tools()
    )
    write_cached_listing(server, tmp_path, McpListing(tools=specs))
    config = tmp_path / "agent.toml"
    config.write_text(
        '[agent]\nmodel = "scripted"\n\n[[tools.mcp]]\nname = "data"\ncommand = "never-started"\n', encoding="utf-8"
    )
    checked = {prefixed_name("data", name) for name in reported(config, Level.WARNING)}
    assert checked and checked == unusable_in_a_run(config)


def _property(**keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"q": {"type": "string", **keywords}}}


ONCE_APART = {
    "examples_as_text": _property(examples="a, b"),  # seal_tools has four of these
    "unique_items_as_text": {"type": "object", "properties": {"t": {"type": "array", "uniqueItems": "yes"}}},
    "format_as_number": _property(format=3),
    "description_as_number": _property(description=7),
    "title_as_list": _property(title=["a"]),
    "deprecated_as_text": _property(deprecated="no"),
    "required_names_map": {"type": "object", "dependentRequired": {"a": "b"}},
    "draft4_exclusive_number": {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 1, "exclusiveMinimum": 3}},
    },
}
FINE = {
    "plain": _property(),
    "examples_as_list": _property(examples=["a", "b"]),
    "draft7_examples": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "examples": [{}]},
    "draft4_exclusive_flag": {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 1, "exclusiveMinimum": True}},
    },
}


def test_each_kind_of_schema_once_judged_apart(tmp_path: Path) -> None:
    tools = [{"name": name, "parameters": schema} for name, schema in {**ONCE_APART, **FINE}.items()]
    (tmp_path / "catalog.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools), encoding="utf-8")
    config = tmp_path / "agent.toml"
    config.write_text('[agent]\nmodel = "scripted"\n\n[tools]\ncatalogs = ["catalog.jsonl"]\n', encoding="utf-8")
    assert reported(config, Level.ERROR) == unusable_in_a_run(config) == set(ONCE_APART)
