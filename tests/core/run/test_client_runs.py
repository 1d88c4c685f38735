"""The public run API a server of MCP clients steps through (``greenroom serve`` does, and
so may any other): a run of kind ``CLIENT`` started with what its caller may not see
(``restrict``), a hook its own plugin declares called outside a run (``call_hook``), and
whether the runtime can serve (``readiness``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from greenroom import HiddenBy, HideReason, Plugin, Readiness, RunKind, Runtime, SearchQuery, hookimpl, hookspec, tool

pytestmark = pytest.mark.anyio


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"read {path}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"DELETED {path}"


class NoDeletes:
    """A caller's view: it may not touch what deletes (a ``RunFilter``)."""

    def tool_hidden(self, name: str, group: str | None) -> HideReason | None:
        return HideReason(HiddenBy.CALLER, "'files:delete'") if name.startswith("delete") else None

    def group_hidden(self, group: str) -> HideReason | None:
        return None


async def test_a_client_run_restricted_to_its_callers_view_never_offers_finds_nor_runs_the_rest(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt = make_runtime(tools=[read_file, delete_file])
    run = rt.start_run(kind=RunKind.CLIENT, restrict=NoDeletes())
    other = rt.start_run(kind=RunKind.CLIENT)
    for r in (run, other):
        await r.start()
    offered = [d.name for d in (await run.next_request()).tools]
    assert offered == ["read_file"] and run.ctx.scope.reasons["delete_file"].by is HiddenBy.CALLER
    found, _ = await run.ctx.search(SearchQuery.parse("delete a file"), [read_file.descriptor, delete_file.descriptor])
    assert [s.name for s in found] == ["read_file"]
    refused = await run.call_tool(run.take_client_call("delete_file", {"path": "/etc"}))
    assert refused.is_error and "DELETED" not in refused.content
    # the restriction is that run's: another client's run of the same runtime has both
    assert [d.name for d in (await other.next_request()).tools] == ["read_file", "delete_file"]
    assert (await other.call_tool(other.take_client_call("delete_file", {"path": "x"}))).content == "DELETED x"
    for r in (run, other):
        await r.end(r.outcome_of("final"))


class Specs:
    @hookspec
    def greenroom_sample_request(self, request: str) -> str | None:
        """A hook an application declares and calls outside any run."""


class Declares(Plugin):
    name = "declares"
    hookspecs = Specs


class Answers(Plugin):
    name = "answers"

    @hookimpl
    def greenroom_sample_request(self, request: str) -> str:
        return f"seen {request}"


async def test_call_hook_reaches_a_plugin_declared_hook_outside_a_run(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(plugins=[Declares(), Answers()])
    assert rt.call_hook("greenroom_sample_request", request="tools/list") == ["seen tools/list"]
    bare = make_runtime()  # nothing declares it here: nothing answers, nothing fails
    assert bare.call_hook("greenroom_sample_request", request="tools/list") == []


class Store(Plugin):
    name = "store"

    def __init__(self, up: bool) -> None:
        super().__init__()
        self.up = up

    @hookimpl
    async def greenroom_readiness(self, runtime: Any) -> list[Readiness]:
        return [Readiness("store postgresql://db", self.up, "" if self.up else "connection refused")]


class Broken(Plugin):
    name = "broken"

    @hookimpl
    def greenroom_readiness(self, runtime: Any) -> list[Readiness]:
        raise RuntimeError("password=hunter2 rejected")


async def test_readiness_names_each_plugins_answer_and_fails_closed(make_runtime: Callable[..., Runtime]) -> None:
    assert await make_runtime(plugins=[Store(up=True)]).readiness() == [
        Readiness(
            "store postgresql://db",
            True,
            "",
            plugin="store",
            distribution=f"{__name__} (not installed)",
        )
    ]
    checks = {c.name: c for c in await make_runtime(plugins=[Store(up=False), Broken()]).readiness()}
    assert not checks["store postgresql://db"].ready and checks["store postgresql://db"].detail == "connection refused"
    broken = checks["plugin broken"]
    assert not broken.ready and broken.plugin == "broken" and "RuntimeError" in broken.detail
    assert "hunter2" not in broken.detail  # an exception's text may quote a secret: the log has it
