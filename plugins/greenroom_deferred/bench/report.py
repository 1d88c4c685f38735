"""The replayed sessions' results for people: a table per price, and a cost plot."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


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
