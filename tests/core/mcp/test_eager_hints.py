"""Eager hints as MCP gives them: a tool listed with ``_meta["anthropic/alwaysLoad"]``
(a real server made with the SDK's server API), and a server's ``always_load`` or
``defer = "never"`` in the config, reach each tool's descriptor (``eager_hint``), and a
cached listing keeps them, so a later process knows them without starting the server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from greenroom.compose.build import build_runtime
from greenroom.config import ConfigError, McpServerConfig
from greenroom.mcp import McpListing, McpToolset, McpToolSpec, read_cached_listing, write_cached_listing
from greenroom.tools.catalog_disk import MIN_BYTES

HERE = Path(__file__).resolve().parent
META = '_meta["anthropic/alwaysLoad"]'


def hinted_config(**keys: object) -> McpServerConfig:
    return McpServerConfig(name="git", command=sys.executable, args=(str(HERE / "hinted_server.py"),), **keys)  # type: ignore[arg-type]


def hints(toolset: McpToolset) -> dict[str, str | None]:
    descriptors = [d for g in toolset.groups() for d in g.known] + [t.descriptor for t in toolset.tools()]
    return {d.name: d.eager_hint for d in descriptors}


def test_a_tool_listed_to_be_always_loaded_carries_the_hint_and_its_cache_keeps_it(
    tmp_path: Path, no_leftovers: None
) -> None:
    toolset = McpToolset([hinted_config()], tmp_path)
    try:
        toolset.prepare_blocking(strict=True)  # never listed: the server starts and lists
        live = hints(toolset)
    finally:
        toolset.close()
    # only exactly true is the hint: "true" (a string) and no _meta are not
    assert live == {"git__status": META, "git__log": None, "git__diff": None, "git__blame": None}

    later = McpToolset([hinted_config()], tmp_path)  # a later process: the listing cache
    assert later.pending() == []
    later.prepare_blocking(strict=True)
    assert not later.host.running  # nothing started
    assert hints(later) == live


def test_a_large_cached_listing_keeps_its_hints_when_read_again_without_parsing(tmp_path: Path) -> None:
    config = McpServerConfig(name="big", command="no-such-binary")
    padding = "x" * 600
    specs = tuple(
        McpToolSpec(f"t{i}", f"Tool {i}. {padding}", {"type": "object"}, always_load=i % 500 == 7) for i in range(2000)
    )
    write_cached_listing(config, tmp_path, McpListing(tools=specs, listed_at=1.0))
    for _ in range(2):  # parsed from its lines, then from the read kept under its digest
        listing = read_cached_listing(config, tmp_path)
        assert listing is not None and listing.digest
        assert [s.name for s in listing.tools if s.always_load] == ["t7", "t507", "t1007", "t1507"]
    assert sum(len(s.to_json()["description"]) for s in specs) > MIN_BYTES  # large enough to be kept


def seed(config: McpServerConfig, folder: Path) -> None:
    """A listing as an earlier process cached it: ``status`` listed to be always loaded."""
    specs = (
        McpToolSpec("status", "Status.", {"type": "object"}, always_load=True),
        McpToolSpec("diff", "Diff.", {"type": "object"}),
        McpToolSpec("diff_staged", "Staged diff.", {"type": "object"}),
        McpToolSpec("blame", "Blame.", {"type": "object"}),
    )
    write_cached_listing(config, folder, McpListing(tools=specs, listed_at=1.0))


def test_always_load_true_hints_every_tool_of_the_server(tmp_path: Path) -> None:
    config = McpServerConfig(name="git", command="no-such-binary", always_load=True)
    seed(config, tmp_path)
    toolset = McpToolset([config], tmp_path)
    words = "always_load of MCP server 'git'"
    # the user's word is the one named, where the server said so too
    expected = {"git__status": words, "git__diff": words, "git__diff_staged": words, "git__blame": words}
    assert hints(toolset) == expected
    assert [g.id for g in toolset.groups()] == ["mcp:git"]  # still one deferred group: the hint places its tools


def test_always_load_globs_hint_the_tools_they_name_by_the_servers_own_names(tmp_path: Path) -> None:
    config = McpServerConfig(name="git", command="no-such-binary", always_load=["diff*", "nothing_*"])
    seed(config, tmp_path)
    assert hints(McpToolset([config], tmp_path)) == {
        "git__status": META,
        "git__diff": "always_load 'diff*' of MCP server 'git'",
        "git__diff_staged": "always_load 'diff*' of MCP server 'git'",
        "git__blame": None,
    }


def test_defer_never_gives_normal_tools_that_all_hint_eager(tmp_path: Path) -> None:
    config = McpServerConfig(name="git", command="no-such-binary", defer="never")
    seed(config, tmp_path)
    toolset = McpToolset([config], tmp_path)
    assert toolset.groups() == []
    assert {t.descriptor.name: t.descriptor.eager_hint for t in toolset.tools()} == dict.fromkeys(
        ["git__status", "git__diff", "git__diff_staged", "git__blame"], "defer = \"never\" of MCP server 'git'"
    )


@pytest.mark.parametrize(
    ("keys", "path", "message"),
    [
        ('always_load = ["diff*", "[x"]', "tools.mcp[0].always_load[1]", "unclosed '['"),
        ("always_load = [3]", "tools.mcp[0].always_load[0]", "expected a string, got integer 3"),
        ("always_load = 3", "tools.mcp[0].always_load", "expected true or false or a list, got integer 3"),
        ('defer = "sometimes"', "tools.mcp[0].defer", "expected true or false or \"never\", got string 'sometimes'"),
    ],
    ids=["bad-glob", "not-a-glob", "not-a-list", "bad-defer"],
)
def test_a_bad_hint_key_is_an_error_at_its_key(tmp_path: Path, keys: str, path: str, message: str) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(f'[[tools.mcp]]\nname = "git"\ncommand = "no-such-binary"\n{keys}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        build_runtime(config, offline_model=True)
    assert (info.value.path, info.value.file) == (path, str(config))
    assert message in info.value.message
