"""The listing cache: keyed without secrets, round-tripped, and ignored when unreadable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenroom.config import McpServerConfig
from greenroom.mcp import McpToolSpec, cache_key, cache_path, read_cached_listing


def test_cache_key_ignores_secrets_and_depends_on_what_runs(tmp_path: Path) -> None:
    a = McpServerConfig(name="a", command="srv", args=("--x",), env={"TOKEN": "one"})
    b = McpServerConfig(name="b", command="srv", args=("--x",), env={"TOKEN": "two"})
    c = McpServerConfig(name="a", command="srv", args=("--y",))
    assert cache_key(a, tmp_path) == cache_key(b, tmp_path) != cache_key(c, tmp_path)
    h1 = McpServerConfig(name="h", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer one"})
    h2 = McpServerConfig(name="h", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer two"})
    assert cache_key(h1) == cache_key(h2)


def test_cache_round_trip_and_no_secrets_on_disk(
    tmp_path: Path, gr_home: Path, seed_cache: Callable[..., None], tool_schema: dict[str, Any]
) -> None:
    cfg = McpServerConfig(name="s", command="srv", env={"API_TOKEN": "very-secret-value"})
    seed_cache(cfg, tmp_path, ["alpha"], instructions="Use alpha.")
    path = cache_path(cfg, tmp_path)
    assert path.parent == gr_home / "mcp-cache"
    assert "very-secret-value" not in path.read_text()
    listing = read_cached_listing(cfg, tmp_path)
    assert listing is not None and listing.instructions == "Use alpha."
    assert listing.tools[0] == McpToolSpec(name="alpha", description="The alpha tool.", input_schema=tool_schema)
    path.write_text("{not json")
    assert read_cached_listing(cfg, tmp_path) is None


@pytest.mark.parametrize("text", ["[]", "null", '"tools"', '{"format": "greenroom.mcp-cache/1", "tools": {"a": 1}}'])
def test_a_cache_file_of_the_wrong_shape_is_ignored(
    tmp_path: Path, gr_home: Path, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = McpServerConfig(name="s", command="srv")
    path = cache_path(cfg, tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    assert read_cached_listing(cfg, tmp_path) is None
    pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")
    from greenroom.mcp import McpToolset

    toolset = McpToolset([cfg], tmp_path)  # building the runtime does not crash on it
    assert toolset.servers["s"].listing is None and toolset.tools() == []
