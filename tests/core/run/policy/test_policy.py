"""The tool policy beyond the matrix: whole groups and servers hidden before they start,
config errors that name the key, what ``greenroom inspect`` shows, and the globs' prefix
reasoning the servers rely on."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.policy_harness import ProbingModel, marks, write_config
from typer.testing import CliRunner

from greenroom._support.globs import could_match_prefixed, matches, matches_every_prefixed
from greenroom.cli import app
from greenroom.run.policy import HiddenBy, ToolPolicy

pytest.importorskip("mcp", reason="drives a real MCP server")
runner = CliRunner()


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLICY_MARKS", str(tmp_path / "marks.txt"))
    return tmp_path


def first_request(config: Path, turns: Sequence[Mapping[str, Any]]) -> tuple[ProbingModel, dict[str, str]]:
    from greenroom import build_runtime

    model = ProbingModel(list(turns))
    rt = build_runtime(config, model=model)
    model.rt = rt

    async def go() -> dict[str, str]:
        try:
            s = rt.session()
            await rt.run(s, "go")
            return {m.tool_call_id or "": m.content for m in s.messages if m.role == "tool"}
        finally:
            await rt.aclose()

    return model, anyio.run(go)


@pytest.mark.slow
def test_a_server_whose_every_tool_is_denied_by_prefix_never_starts(work: Path) -> None:
    config = write_config(work, policy='deny = ["srv__*"]')
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"id": "load", "name": "load_tools", "arguments": {"group_id": "mcp:srv"}}]},
        {"tool_calls": [{"id": "call", "name": "srv__read", "arguments": {"q": "x"}}]},
        {"text": "done"},
    ]
    model, results = first_request(config, turns)
    assert "started srv" not in marks(work)  # not even to list it: no cached listing was needed
    system = model.requests[0].system_text
    assert "mcp:srv" not in system and "srv__" not in system
    assert "unknown group 'mcp:srv'" in results["load"]
    assert "no tool named 'srv__read'" in results["call"]


@pytest.mark.slow
def test_a_server_hidden_by_its_cached_listing_never_starts_again(work: Path) -> None:
    first_request(write_config(work, policy=False), [{"text": "listed"}])
    assert marks(work).count("started srv") == 1  # listed once, and its listing cached
    config = write_config(work, policy='deny = ["srv__read", "srv__delete_all"]')
    model, _ = first_request(config, [{"text": "done"}])
    assert marks(work).count("started srv") == 1
    assert "mcp:srv" not in model.requests[0].system_text


def test_allow_hides_every_other_source_and_a_group_with_nothing_left(work: Path) -> None:
    config = write_config(work, policy='allow = ["py_*"]\ndeny = ["py_delete_all"]')
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"id": "load", "name": "load_tools", "arguments": {"group_id": "grp"}}]},
        {"text": "done"},
    ]
    model, results = first_request(config, turns)
    system = model.requests[0].system_text
    assert "py_read" in system
    for gone in ("grp", "cat_read", "srv__read", "py_delete_all"):
        assert gone not in system
    assert "unknown group 'grp'" in results["load"]
    assert "load grp" not in marks(work) and "started srv" not in marks(work)


@pytest.mark.parametrize(
    ("table", "where"),
    [
        ('allow = ["ok", "b{c"]', "tools.policy.allow[1]"),
        ('deny = ["[x"]', "tools.policy.deny[0]"),
        ("deny = 3", "tools.policy.deny"),
        ('alow = ["x"]', "tools.policy.alow"),
    ],
)
def test_a_bad_policy_names_its_key(work: Path, table: str, where: str) -> None:
    config = work / "bad.toml"
    config.write_text(f"[tools.policy]\n{table}\n", encoding="utf-8")
    result = runner.invoke(app, ["config", "check", str(config)])
    assert result.exit_code == 2
    flat = " ".join(result.output.split())
    assert f"{config}: {where}" in flat and "Traceback" not in flat


@pytest.mark.slow
def test_inspect_marks_hidden_tools_with_the_rule(work: Path) -> None:
    config = write_config(work, policy='deny = ["*delete_all", "srv__*"]')
    result = runner.invoke(app, ["inspect", str(config), "--json"], env={**os.environ, "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    rows = {t["name"]: t for t in report["tools"]}
    assert rows["py_delete_all"]["mode"] == "hidden"
    assert rows["py_delete_all"]["reason"] == "policy deny '*delete_all'"
    assert rows["grp_delete_all"]["mode"] == "hidden"  # from the group's catalog, before it loads
    assert rows["py_read"]["mode"] in ("eager", "deferred")
    assert report["totals"]["hidden_groups"] == ["mcp:srv"]
    assert report["totals"]["tools"] == 3  # py_read, cat_read, grp_read: hidden ones are not the agent's
    text = runner.invoke(app, ["inspect", str(config)], env={**os.environ, "COLUMNS": "200"}).output
    assert "hidden" in text and "whole groups: mcp:srv" in text


def test_policy_reasons() -> None:
    policy = ToolPolicy(allow=("github__*",), deny=("*__delete_*",))
    assert policy.reason("github__list") is None
    denied = policy.reason("github__delete_repo")
    assert denied is not None and denied.by is HiddenBy.DENY and denied.rule == "*__delete_*"
    outside = policy.reason("time__now")
    assert outside is not None and outside.by is HiddenBy.NOT_ALLOWED
    assert policy.reason("ToolSearch", plugin_tool=True) is None  # plugin tools need no allow rule
    assert ToolPolicy(deny=("ToolSearch",)).reason("ToolSearch", plugin_tool=True) is not None
    assert policy.hides_every_name_with("time__") is not None
    assert policy.hides_every_name_with("github__") is None
    assert ToolPolicy(deny=("github__*",)).hides_every_name_with("github__") is not None
    assert ToolPolicy(deny=("github__delete_*",)).hides_every_name_with("github__") is None


NAME_CHARS = st.sampled_from(list("ab_-1"))
GLOB_PARTS = st.sampled_from(["a", "b", "_", "__", "*", "?", "[ab]", "[!a]", "{a,b_}"])


@given(
    pattern=st.lists(GLOB_PARTS, min_size=1, max_size=5).map("".join),
    prefix=st.lists(NAME_CHARS, min_size=1, max_size=4).map("".join),
    suffix=st.lists(NAME_CHARS, min_size=1, max_size=4).map("".join),
)
def test_prefix_reasoning_is_never_wrong_in_the_unsafe_direction(pattern: str, prefix: str, suffix: str) -> None:
    hit = matches(pattern, prefix + suffix)
    if hit:
        assert could_match_prefixed(pattern, prefix)  # else a server with an allowed tool would be skipped
    if matches_every_prefixed(pattern, prefix):
        assert hit  # else a deny would claim a tool it does not match
