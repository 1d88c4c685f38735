"""Eager hints placed: a tool a server lists with ``_meta["anthropic/alwaysLoad"]``, or
that its server's ``always_load``/``defer = "never"`` names, starts eager unless the
user's rules say otherwise; ``greenroom inspect`` names the hint; learned priors never
demote it; a gateway client finds it in ``tools/list``. A real server made with the
SDK's server API (hinted_server.py), the deferred-tools plugin as a config turns it on."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from support.serve_testutil import stdio_gateway
from typer.testing import CliRunner

from greenroom import Plugin, ToolPriors, hookimpl
from greenroom.cli import app
from greenroom.cli.inspection import inspect_runtime
from greenroom.compose.build import build_runtime
from greenroom.providers.scripted import ScriptedModel
from greenroom_deferred import DeferralState, PlacementSource
from greenroom_deferred.placing.learning import LearnedView

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SERVER = Path(__file__).resolve().parent / "hinted_server.py"
META = 'hint: _meta["anthropic/alwaysLoad"]'


def write_config(folder: Path, server_keys: str = "", deferred: str = "") -> Path:
    path = folder / "agent.toml"
    path.write_text(
        '[agent]\nid = "hinted"\nmodel = "scripted:"\n\n'
        f'[[tools.mcp]]\nname = "git"\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVER))}]\n'
        f"{server_keys}\n\n[plugins.deferred-tools]\nenabled = true\n{deferred}\n",
        encoding="utf-8",
    )
    return path


async def placed(config: Path) -> dict[str, tuple[str, str, str]]:
    """Each tool of the server: (mode, source, reason), as ``greenroom inspect`` has it."""
    report = await inspect_runtime(build_runtime(config, offline_model=True))
    return {r["name"]: (r["mode"], r["source"], r["reason"]) for r in report["tools"] if r["name"].startswith("git__")}


async def test_a_tool_listed_to_be_always_loaded_starts_eager_and_inspect_names_the_hint(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    rows = await placed(config)
    assert rows["git__status"] == ("eager", "hint", META)
    assert {n: rows[n][:2] for n in ("git__log", "git__diff", "git__blame")} == dict.fromkeys(
        ["git__log", "git__diff", "git__blame"], ("deferred", "group")
    )


def test_the_inspect_command_shows_the_hint(tmp_path: Path) -> None:
    shown = CliRunner().invoke(app, ["inspect", str(write_config(tmp_path)), "--json"])
    assert shown.exit_code == 0, shown.output
    rows = {t["name"]: t for t in json.loads(shown.output)["tools"]}
    assert (rows["git__status"]["mode"], rows["git__status"]["source"]) == ("eager", "hint")
    assert rows["git__status"]["reason"] == META
    shown = CliRunner().invoke(app, ["inspect", str(write_config(tmp_path))])
    line = next(x for x in shown.output.splitlines() if "git__status" in x)
    assert "eager" in line and "hint:" in line


@pytest.mark.parametrize(
    ("server_keys", "deferred", "expected"),
    [
        # the server's config, both ways: globs on its own names, and every tool
        (
            'always_load = ["bla*"]',
            "",
            {
                "git__status": ("eager", "hint", META),
                "git__blame": ("eager", "hint", "hint: always_load 'bla*' of MCP server 'git'"),
                "git__diff": ("deferred", "group", "group mcp:git"),
            },
        ),
        (
            'defer = "never"',
            "",
            {
                "git__status": ("eager", "hint", "hint: defer = \"never\" of MCP server 'git'"),
                "git__blame": ("eager", "hint", "hint: defer = \"never\" of MCP server 'git'"),
                "git__diff": ("eager", "hint", "hint: defer = \"never\" of MCP server 'git'"),
            },
        ),
        # the user's rules say otherwise: a rule wins over the tool's hint and its server's
        (
            "always_load = true",
            'rules = [{ tool = "git__{status,diff}", mode = "deferred" }]',
            {
                "git__status": ("deferred", "rule", "rule 'git__{status,diff}'"),
                "git__blame": ("eager", "hint", "hint: always_load of MCP server 'git'"),
                "git__diff": ("deferred", "rule", "rule 'git__{status,diff}'"),
            },
        ),
        # never_defer is the user's too; a hint wins over the default mode, whichever it is
        (
            'defer = false\nalways_load = ["diff"]',
            'never_defer = ["git__diff"]\ndefault_mode = "eager"',
            {
                "git__status": ("eager", "hint", META),
                "git__blame": ("eager", "default", "default"),
                "git__diff": ("eager", "never_defer", "never_defer"),
            },
        ),
    ],
    ids=["always-load-globs", "defer-never", "rule-over-hint", "never-defer"],
)
async def test_each_hint_yields_to_the_users_rules(
    tmp_path: Path, server_keys: str, deferred: str, expected: dict[str, Any]
) -> None:
    rows = await placed(write_config(tmp_path, server_keys, deferred))
    assert {n: rows[n] for n in expected} == expected


class Priors(Plugin):
    """What earlier sessions of the agent did: ``diff`` and ``status`` called together in
    nine sessions of ten (learning makes the set eager), ``status`` once in a long while
    within a session (its use so rare that retention would soon take back an eager place
    learned for it)."""

    name = "fake-priors"
    nonblocking = True

    @hookimpl(tryfirst=True)
    def greenroom_run_start(self, ctx: Any) -> None:
        pair = frozenset({"git__diff", "git__status"})
        ctx.profile_state.set(
            ToolPriors(p={"git__diff": 0.9, "git__status": 0.01}, sessions=10, steps=6.0, loaded=True, sets={pair: 0.9})
        )


async def test_learning_never_demotes_a_hinted_tool(tmp_path: Path) -> None:
    # inject re-defers the idle tools that use placed eager (promoted, or learned): a
    # hinted tool, idle the whole session here, stays eager (a learned one would not)
    config = write_config(tmp_path, "", 'strategy = "inject"\nretention = { defer_after = 1, gamma = 50.0 }')
    # these priors, not a store's
    config.write_text(config.read_text() + '\n[plugins]\ndisable = ["priors-persistence"]\n', encoding="utf-8")
    diff = {"tool_calls": [{"name": "git__diff", "arguments": {"path": "."}}]}
    model = ScriptedModel([diff] * 6 + [{"text": "done"}])
    rt = build_runtime(config, model=model, extra_plugins=[Priors()])
    try:
        session = rt.session()
        await session.run("what changed?")
        modes = session.state[DeferralState].modes
        view = session.runtime.profile_state[LearnedView]
    finally:
        await rt.aclose()
    assert (modes["git__status"].mode, modes["git__status"].source) == ("eager", PlacementSource.HINT)
    assert (modes["git__diff"].mode, modes["git__diff"].source) == ("eager", PlacementSource.PRIOR)
    # the learned set is diff alone: status was free (eager anyway), its schema not counted
    assert set(view.eager) == {"git__diff"}


async def test_a_gateway_client_finds_a_hinted_tool_in_tools_list(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    async with stdio_gateway(config) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert "git__status" in listed and "git__diff" not in listed
        result = await client.call_tool("git__status", {})
        assert not result.is_error
