"""Gateway clients share one runtime and never each other's run: any interleaving of
several clients' calls gives each client exactly what it gets alone on a runtime of its
own (the tools it is offered after each call, and every result), under both strategies.
Each client holds its own ``Run`` of kind ``CLIENT``; nothing of one run lives on a
plugin instance."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenroom import build_runtime
from greenroom_gateway.clients import ClientRun

TOOLS = '''
from greenroom import tool

@tool(group="weather")
def forecast(city: str) -> str:
    """Weather forecast for a city."""
    return f"sunny in {city}"

@tool(group="weather")
def alerts(region: str) -> str:
    """Severe weather alerts for a region."""
    return f"no alerts for {region}"

@tool(group="billing")
def invoice(customer: str) -> str:
    """Create an invoice for a customer."""
    return f"invoice for {customer}"

@tool(group="billing")
def refund(customer: str, amount: int) -> str:
    """Refund a customer."""
    return f"refunded {amount} to {customer}"

@tool
def echo(text: str) -> str:
    """Echo text back."""
    return text

TOOLS = [forecast, alerts, invoice, refund, echo]
'''

OPS: list[tuple[str, dict[str, Any]]] = [
    ("ToolSearch", {"query": "weather forecast"}),
    ("ToolSearch", {"query": "select:refund"}),
    ("load_tools", {"group_id": "billing"}),
    ("forecast", {"city": "Oslo"}),
    ("refund", {"customer": "ada", "amount": 3}),
    ("echo", {"text": "hi"}),
    ("invoice", {"customer": "bob"}),
]


def write_config(folder: Path, strategy: str) -> Path:
    (folder / "gw_tools.py").write_text(TOOLS, encoding="utf-8")
    config = folder / f"{strategy}.toml"
    config.write_text(
        textwrap.dedent(f"""
            [agent]
            id = "gateway-{strategy}"
            model = "scripted:"
            [tools]
            python = ["gw_tools:TOOLS"]
            [plugins]
            disable = ["priors-persistence"]  # what one client teaches would reach the next
            [plugins.deferred-tools]
            strategy = "{strategy}"
            enabled = true
            never_defer = ["echo"]
        """),
        encoding="utf-8",
    )
    return config


def seen(client: ClientRun) -> tuple[str, ...]:
    return client.view.tool_names()


async def alone(config: Path, ops: list[int]) -> list[Any]:
    rt = build_runtime(config)
    try:
        client = ClientRun(rt)
        await client.ready()
        out: list[Any] = [seen(client)]
        for i in ops:
            name, args = OPS[i]
            result, _ = await client.call(name, args)
            out.append((result.content, result.is_error, seen(client)))
        await client.end()
        return out
    finally:
        await rt.aclose()


async def together(config: Path, scripts: list[list[int]], order: list[int]) -> list[list[Any]]:
    rt = build_runtime(config)
    try:
        clients = [ClientRun(rt) for _ in scripts]
        outs: list[list[Any]] = [[] for _ in scripts]
        left = [list(s) for s in scripts]
        started: set[int] = set()
        for pick in order + list(range(len(scripts))) * (1 + max(len(s) for s in scripts)):
            c = pick % len(scripts)
            if c not in started:
                started.add(c)
                await clients[c].ready()
                outs[c].append(seen(clients[c]))
                continue
            if not left[c]:
                continue
            name, args = OPS[left[c].pop(0)]
            result, _ = await clients[c].call(name, args)
            outs[c].append((result.content, result.is_error, seen(clients[c])))
        for client in clients:
            await client.end()
        return outs
    finally:
        await rt.aclose()


@pytest.mark.parametrize("strategy", ["dispatch", "inject"])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    scripts=st.lists(st.lists(st.integers(0, len(OPS) - 1), min_size=1, max_size=5), min_size=2, max_size=3),
    order=st.lists(st.integers(0, 2), max_size=20),
)
def test_interleaved_clients_get_what_each_gets_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strategy: str, scripts: list[list[int]], order: list[int]
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path / "home"))
    config = write_config(tmp_path, strategy)
    mixed = anyio.run(together, config, scripts, order)
    for script, got in zip(scripts, mixed, strict=True):
        assert got == anyio.run(alone, config, script)


def test_clients_served_as_agents_of_their_own_keep_their_own_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve --per-client``: each client's priors are its agent's, never overwritten by
    another client's run start."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path / "home"))
    config = write_config(tmp_path, "dispatch")

    async def main() -> None:
        rt = build_runtime(config)
        try:
            alpha, beta = ClientRun(rt, client_name="alpha"), ClientRun(rt, client_name="beta")
            await alpha.ready()
            alpha.run.ctx.priors.p["forecast"] = 0.9
            await beta.ready()
            assert alpha.run.ctx.agent.id.endswith(".alpha") and beta.run.ctx.agent.id.endswith(".beta")
            assert alpha.run.ctx.priors is not beta.run.ctx.priors
            assert alpha.run.ctx.priors.p == {"forecast": 0.9} and "forecast" not in beta.run.ctx.priors.p
            await alpha.end()
            await beta.end()
        finally:
            await rt.aclose()

    anyio.run(main)
