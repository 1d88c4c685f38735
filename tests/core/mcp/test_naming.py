"""Model-facing names of MCP tools: provider-safe, unique across servers, stable."""

from __future__ import annotations

import logging
import re

import pytest

from greenroom.mcp import ToolNamer


def test_prefixed_names_and_unsafe_characters() -> None:
    namer = ToolNamer()
    assert namer.name("time", "get_current_time", "prefixed") == "time__get_current_time"
    assert namer.name("my.server", "do it", "prefixed") == "my_server__do_it"


def test_bare_names_fall_back_to_prefixed_when_ambiguous(caplog: pytest.LogCaptureFixture) -> None:
    namer = ToolNamer(reserved=["search"])
    assert namer.name("a", "status", "bare") == "status"
    with caplog.at_level(logging.WARNING, logger="greenroom.mcp"):
        assert namer.name("b", "status", "bare") == "b__status"
        assert namer.name("c", "search", "bare") == "c__search"
    assert "server 'a'" in caplog.text
    assert namer.name("a", "status", "bare") == "status"  # stable on re-listing


def test_long_names_are_shortened_to_what_providers_accept() -> None:
    # OpenAI refuses a request whose tools array has a name over 64 characters (and the
    # MCP spec allows tool names up to 128), so one long tool would break every step
    namer = ToolNamer()
    server = "github-enterprise-cloud"
    tools = ["list_pull_request_review_comments_for_repository", "list_pull_request_review_comments_for_repositories"]
    names = [namer.name(server, t, "prefixed") for t in tools]
    bare = namer.name("x", "t" * 128, "bare")
    for name in (*names, bare):
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name), name
    assert names[0] != names[1]  # still two tools
    assert names[0].startswith("github-enterprise-cloud__list_pull_request_review_comme")
    assert [namer.name(server, t, "prefixed") for t in tools] == names  # stable
    assert namer.name("time", "get_current_time", "prefixed") == "time__get_current_time"  # short ones unchanged


def test_a_name_listed_twice_gets_a_stable_suffix(caplog: pytest.LogCaptureFixture) -> None:
    namer = ToolNamer(reserved=["fetch"])
    with caplog.at_level(logging.WARNING, logger="greenroom.mcp"):
        first = [namer.name("docs", "search", "prefixed", n) for n in (1, 2, 3)]
        bare = [namer.name("web", "fetch", "bare", n) for n in (1, 2)]
    assert first == ["docs__search", "docs__search_2", "docs__search_3"]
    assert bare == ["web__fetch", "web__fetch_2"]  # the bare name is taken: the copy follows the first's name
    assert "MCP server 'docs' lists the tool 'search' more than once; copy 2 is 'docs__search_2'" in caplog.text
    # a real tool whose name is the suffixed one keeps a distinct name, and nothing moves on re-listing
    assert namer.name("docs", "search_2", "prefixed") == "docs__search_2_2"
    assert [namer.name("docs", "search", "prefixed", n) for n in (1, 2, 3)] == first
