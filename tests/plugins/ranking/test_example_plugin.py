"""The example third-party ranker (examples/group_boost_ranker), installed with pip:
it changes the ranking only when ``[plugins] enable`` names it.

It is installed into a folder of its own, never into the shared environment, and used
by a subprocess that has that folder on PYTHONPATH (entry points are found there).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.gr_testutil import EXAMPLES, env_with_path, pip_install

DIST = "greenroom-group-boost"

# Ranks three tools of three groups for a query naming the "support" group (whose words
# create_page's description holds too, so the built-in rankers put it first), with and
# without the plugin enabled, in the process that sees it installed.
PROBE = """
import json
import anyio
from greenroom import Runtime, SearchQuery, ToolDescriptor, FunctionTool, make_plugin_host
from greenroom.plugins.discovery import discover
from greenroom.providers.scripted import ScriptedModel

CATALOG = [
    ToolDescriptor("create_invoice", "Create an invoice document", group="billing"),
    ToolDescriptor("create_page", "Create a support document page in the document store", group="docs"),
    ToolDescriptor("create_ticket", "Open a ticket for a customer", group="support"),
]


async def ranked(enable):
    host = make_plugin_host(enable=enable, disable=["deferred-tools", "priors-persistence"])
    runtime = Runtime(model=ScriptedModel([]), tools=[FunctionTool(lambda: None, t) for t in CATALOG], host=host)
    results, _ = await runtime.search(SearchQuery.parse("create support document", max_results=3), CATALOG)
    return [s.name for s in results]


record = next(r for r in discover() if r.name == "group-boost")
print(json.dumps({
    "distribution": record.distribution,
    "enabled": make_plugin_host().pm.get_plugin("group-boost") is not None,
    "without": anyio.run(ranked, []),
    "with": anyio.run(ranked, ["group-boost"]),
}))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install([EXAMPLES / "group_boost_ranker"], tmp_path_factory.mktemp("group-boost"))


@pytest.mark.slow
def test_group_boost_changes_ranking_only_when_enabled(site: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=env_with_path(site),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["distribution"] == DIST and not got["enabled"]  # installed, opt-in
    assert got["without"][0] != "create_ticket"
    assert got["with"][0] == "create_ticket"  # "support" names the group of create_ticket


@pytest.mark.slow
def test_rank_eval_measures_an_installed_third_party_ranker_by_name(site: Path, tmp_path: Path) -> None:
    tools = tmp_path / "tools.jsonl"
    queries = tmp_path / "queries.jsonl"
    rows = [("create_invoice", "billing"), ("create_page", "docs"), ("create_ticket", "support")]
    tools.write_text(
        "\n".join(json.dumps({"name": n, "description": f"Create a {g} item", "group": g}) for n, g in rows)
    )
    queries.write_text(json.dumps({"query": "create a support thing", "gold": ["create_ticket"]}))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "greenroom.cli",
            "rank",
            "eval",
            "--tools",
            str(tools),
            "--queries",
            str(queries),
            "--ranker",
            "group-boost",
            "--form",
            "full",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env_with_path(site, GREENROOM_HOME=str(tmp_path / "home")),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(out.stdout)["results"]
    assert result["ranker"] == "group-boost" and result["recall_at_5"] == 1.0
