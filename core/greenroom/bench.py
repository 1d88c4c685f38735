"""Replayed sessions for benchmarks: ``greenroom bench sessions``.

A scripted model works through a session of N steps on a real catalog, discovering a
handful of tools spread over it and calling what it found. The same session is replayed
under each strategy (all-eager, inject with retention, dispatch, names-only dispatch)
with the deferred-tools plugin loaded through its entry point, and every request is
recorded block by block so ``greenroom.costing`` can bill it as each provider would.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from greenroom.accounting import message_tokens
from greenroom.compose import plugin_configs
from greenroom.config import AgentConfig, RuntimeConfig
from greenroom.costing import DEFAULT_PRICES, Price, Request, StepBill, bill
from greenroom.models import ModelRequest
from greenroom.plugins import discover, make_plugin_host
from greenroom.providers.scripted import PolicyModel
from greenroom.runtime import Runtime
from greenroom.tokens import count_tokens, tool_tokens
from greenroom.tools import Tool
from greenroom.tools.catalog import load_catalog

STRATEGIES: dict[str, dict[str, Any]] = {
    "all-eager": {"enabled": False},
    "inject": {"enabled": True, "strategy": "inject"},
    "dispatch": {"enabled": True, "strategy": "dispatch"},
    "dispatch-names": {"enabled": True, "strategy": "dispatch", "listing": "names"},
}


def session_policy(targets: Sequence[str], steps: int, discoveries: int) -> Any:
    """Discover ``discoveries`` tools spread over ``steps`` steps, calling what was found
    in between; answer on the last step."""
    every = max(1, (steps - 1) // max(1, discoveries))
    found: list[str] = []

    def policy(request: ModelRequest) -> dict[str, Any]:
        step = request.step
        if step >= steps:
            return {"text": "done"}
        visible = {t.name for t in request.tools}
        if len(found) < discoveries and (step - 1) % every == 0:
            name = targets[len(found)]
            found.append(name)
            return {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": f"select:{name}"}}]}
        name = found[(step - 1) % len(found)] if found else targets[0]
        if name in visible or "deferred_tool_call" not in visible:
            return {"tool_calls": [{"name": name, "arguments": {}}]}
        return {"tool_calls": [{"name": "deferred_tool_call", "arguments": {"tool_name": name, "arguments": {}}}]}

    return policy


class _Recorder(PolicyModel):
    """Keeps each request as cache blocks (prefix, then one block per message)."""

    def __init__(self, policy: Any) -> None:
        super().__init__(policy)
        self.blocks: list[Request] = []

    async def complete(self, request: ModelRequest) -> Any:
        response = await super().complete(request)
        prefix = sum(tool_tokens(t) for t in request.tools) + count_tokens(request.system_text)
        key = "|".join(t.name for t in request.tools) + "\x00" + request.system_text
        self.blocks.append(
            Request(
                prefix_hash=str(hash(key)),
                prefix_tokens=prefix,
                message_tokens=tuple(message_tokens(m) for m in request.messages),
                message_ids=tuple(str(id(m)) for m in request.messages),
                output_tokens=response.usage.output_tokens,
            )
        )
        return response


def _deferred_host(options: Mapping[str, Any]) -> Any:
    records = [r for r in discover() if r.name == "deferred-tools" and r.cls is not None]
    if not records:
        raise RuntimeError("the deferred-tools plugin is not installed")
    cfg = RuntimeConfig(plugin_sections={"deferred-tools": dict(options)})
    return make_plugin_host(plugin_configs(cfg, records), records=records)


async def replay(
    tools: Sequence[Tool], options: Mapping[str, Any], targets: Sequence[str], steps: int, discoveries: int
) -> list[Request]:
    model = _Recorder(session_policy(targets, steps, discoveries))
    rt = Runtime(model=model, tools=tools, host=_deferred_host(options), agent=AgentConfig(max_steps=steps + 1))
    await rt.session().run("work through the task")
    return model.blocks


def load_tools(path: Path, limit: int | None = None) -> list[Tool]:
    return list(load_catalog(path, limit=limit))


def compare(
    tools: Sequence[Tool],
    *,
    steps: int = 30,
    discoveries: int = 5,
    seed: int = 7,
    prices: Mapping[str, Price] = DEFAULT_PRICES,
) -> dict[str, dict[str, Any]]:
    """Replay one session under every strategy and bill it under every price."""
    targets = random.Random(seed).sample([t.descriptor.name for t in tools], discoveries)
    out: dict[str, dict[str, Any]] = {}
    for name, options in STRATEGIES.items():
        requests = anyio.run(replay, tools, options, targets, steps, discoveries)
        per_price: dict[str, Any] = {}
        for label, price in prices.items():
            bills: list[StepBill] = bill(requests, price)
            total_in = sum(b.uncached + b.cache_write + b.cache_read for b in bills)
            per_price[label] = {
                "cost": sum(b.cost for b in bills),
                "cumulative": [sum(b.cost for b in bills[: i + 1]) for i in range(len(bills))],
                "input_tokens": total_in,
                "cache_read": sum(b.cache_read for b in bills),
                "cache_write": sum(b.cache_write for b in bills),
                "hit_rate": sum(b.cache_read for b in bills) / max(1, total_in),
            }
        out[name] = {
            "steps": len(requests),
            "input_tokens": sum(r.total for r in requests),
            "prefixes": len({r.prefix_hash for r in requests}),
            "prices": per_price,
        }
    return out


def print_session_costs(console: Console, label: str, results: dict[str, Any]) -> None:
    """A table per price: input tokens, cache hit rate, cost and its ratio to all-eager."""
    prices = list(next(iter(results.values()))["prices"])
    for price in prices:
        base = results["all-eager"]["prices"][price]["cost"]
        table = Table(title=f"{label} · {price}")
        for col in ("strategy", "steps", "input tokens", "cache read", "hit rate", "prefixes", "cost $", "x all-eager"):
            table.add_column(col, justify="left" if col == "strategy" else "right")
        for name, r in results.items():
            p = r["prices"][price]
            table.add_row(
                name,
                str(r["steps"]),
                f"{p['input_tokens']:,}",
                f"{p['cache_read']:,}",
                f"{p['hit_rate']:.0%}",
                str(r["prefixes"]),
                f"{p['cost']:.4f}",
                f"{p['cost'] / base:.3f}",
            )
        console.print(table)


def plot_cumulative(results: dict[str, Any], path: Any, title: str) -> None:
    """Cumulative cost per step, one line per strategy, one panel per price."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # the plot is optional; the numbers are printed anyway
        raise RuntimeError("plotting needs matplotlib: pip install 'greenroom[bench]'") from exc
    prices = list(next(iter(results.values()))["prices"])
    fig, axes = plt.subplots(1, len(prices), figsize=(5 * len(prices), 4), squeeze=False)
    for ax, price in zip(axes[0], prices, strict=False):
        for name, r in results.items():
            series = r["prices"][price]["cumulative"]
            ax.plot(range(1, len(series) + 1), series, label=name)
        ax.set_title(price)
        ax.set_xlabel("step")
        ax.set_ylabel("cumulative input+output cost ($)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
