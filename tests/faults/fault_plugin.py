"""A plugin that fails on demand, copied into a throwaway site folder with a hand-written
dist-info (distribution ``greenroom-fault-plugin 0.1``, plugin ``faulty``), as a
third-party plugin would be installed.

Its environment chooses the fault: ``FAULT_RAISE`` names the hook that raises,
``FAULT_HANG`` the hook that waits for good (after writing ``FAULT_MARKER``, so a test knows
it is there). Per-call hooks trip on every call but ``ping``'s, so a turn shows one call
failing closed beside one that works. It also provides the model ``stall:``, which never
answers (after writing ``FAULT_MARKER``): a run interrupted while the model thinks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from greenroom import Plugin, hookimpl

SPARED_TOOL = "ping"


async def trip(hook: str, tool: str | None = None) -> None:
    """Raise or hang if the environment says ``hook`` should (per-call hooks spare ``ping``)."""
    if tool == SPARED_TOOL:
        return
    if os.environ.get("FAULT_RAISE") == hook:
        raise RuntimeError(f"faulty trips in {hook}")
    if os.environ.get("FAULT_HANG") == hook:
        Path(os.environ["FAULT_MARKER"]).write_text(hook)
        await anyio.Event().wait()


class StalledModel:
    """A model that is thinking, and never stops."""

    async def complete(self, request: Any) -> Any:
        Path(os.environ["FAULT_MARKER"]).write_text("thinking")
        await anyio.Event().wait()


class Faulty(Plugin):
    name = "faulty"

    @hookimpl
    def greenroom_model_providers(self) -> Mapping[str, Any]:
        return {"stall": lambda spec, options: StalledModel()}

    @hookimpl
    async def greenroom_run_start(self, ctx: Any) -> None:
        await trip("greenroom_run_start")

    @hookimpl
    async def greenroom_hidden_tools(self, ctx: Any, tools: Sequence[Any]) -> None:
        await trip("greenroom_hidden_tools")

    @hookimpl
    async def greenroom_before_inference(self, ctx: Any, request: Any) -> None:
        await trip("greenroom_before_inference")

    @hookimpl
    async def greenroom_after_inference(self, ctx: Any, response: Any) -> None:
        await trip("greenroom_after_inference")

    @hookimpl
    async def greenroom_resolve_tool_call(self, ctx: Any, call: Any) -> None:
        await trip("greenroom_resolve_tool_call", call.name)

    @hookimpl
    async def greenroom_before_tool_execute(self, ctx: Any, call: Any, tool: Any) -> None:
        await trip("greenroom_before_tool_execute", call.name)

    @hookimpl
    async def greenroom_after_tool_execute(self, ctx: Any, call: Any, result: Any) -> None:
        await trip("greenroom_after_tool_execute", call.name)

    @hookimpl
    async def greenroom_rank_tools(self, ctx: Any, query: Any, candidates: Sequence[Any]) -> None:
        await trip("greenroom_rank_tools")
