"""The example third-party ranker (examples/group_boost_ranker), installed with pip:
it changes the ranking only when ``[plugins] enable`` names it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
from gr_testutil import EXAMPLES

from greenroom import SearchQuery, ToolDescriptor
from greenroom.plugins import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.runtime import Runtime
from greenroom.tools import FunctionTool

DIST = "greenroom-group-boost"
CATALOG = [
    ToolDescriptor("create_invoice", "Create an invoice document", group="billing"),
    ToolDescriptor("create_page", "Create a page in the document store", group="docs"),
    ToolDescriptor("create_ticket", "Open a ticket for a customer", group="support"),
]


def pip(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check", *args], check=True, capture_output=True
    )


@pytest.fixture(scope="module")
def installed() -> Iterator[None]:
    pip("install", "--no-deps", "--no-build-isolation", str(EXAMPLES / "group_boost_ranker"))
    try:
        yield
    finally:
        pip("uninstall", "-y", DIST)
        for leftover in ("build", "greenroom_group_boost.egg-info"):  # an in-tree build leaves these
            shutil.rmtree(EXAMPLES / "group_boost_ranker" / leftover, ignore_errors=True)


async def ranked(enable: list[str]) -> list[str]:
    host = make_plugin_host(enable=enable, disable=["deferred-tools", "priors-persistence"])
    runtime = Runtime(model=ScriptedModel([]), tools=[FunctionTool(lambda: None, t) for t in CATALOG], host=host)
    results, _ = await runtime.search(SearchQuery.parse("create support document", max_results=3), CATALOG)
    return [s.name for s in results]


@pytest.mark.slow
@pytest.mark.anyio
async def test_group_boost_changes_ranking_only_when_enabled(installed: None) -> None:
    host = make_plugin_host()
    record = next(r for r in host.records if r.name == "group-boost")
    assert record.distribution == DIST and not record.enabled  # installed, opt-in
    without = await ranked([])
    with_it = await ranked(["group-boost"])
    assert without[0] != "create_ticket"
    assert with_it[0] == "create_ticket"  # "support" names the group of create_ticket
