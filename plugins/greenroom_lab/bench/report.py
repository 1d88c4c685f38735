"""The replayed sessions' results for people: a table per price, and a cost plot."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from greenroom_lab.plots import pyplot


def print_session_costs(console: Console, label: str, results: dict[str, Any]) -> None:
    """A table per price: input tokens, cache hit rate, cost and its ratio to all-eager.

    Sized for 80 columns: every strategy replays the same number of steps, so the count
    is in the title, not a column; short headers and no vertical rules leave every number
    its digits, and strategy names are never cut (``dispatch`` and ``dispatch-names``
    must stay apart).
    """
    prices = list(next(iter(results.values()))["prices"])
    steps = sorted({r["steps"] for r in results.values()})
    counted = f"{steps[0]} steps" if len(steps) == 1 else "steps " + "/".join(map(str, steps))
    for price in prices:
        base = results["all-eager"]["prices"][price]["cost"]
        rows = []
        for name, r in results.items():
            if price not in r["prices"]:
                continue  # a strategy only one provider has (native-openai)
            p = r["prices"][price]
            rows.append(
                [
                    escape(name),
                    f"{p['input_tokens']:,}",
                    f"{p['cache_read']:,}",
                    f"{p['hit_rate']:.0%}",
                    str(r["prefixes"]),
                    f"{p['cost']:.4f}",
                    f"{p['cost'] / base:.3f}",
                ]
            )
        # no vertical rules and short headers: at 80 columns no digit and no name is cut
        table = Table(
            title=escape(f"{label} · {price} · {counted}"),
            caption="input and cache read in tokens; x eager: the cost over all-eager's",
            box=box.SIMPLE_HEAD,
        )
        headers = ("strategy", "input", "cache read", "hit", "prefixes", "cost $", "x eager")
        for i, col in enumerate(headers):
            table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
        for row in rows:
            table.add_row(*row)
        console.print(table)


def plot_cumulative(results: dict[str, Any], path: Any, title: str) -> None:
    """Cumulative cost per step, one line per strategy, one panel per price."""
    plt = pyplot()
    prices = list(next(iter(results.values()))["prices"])
    fig, axes = plt.subplots(1, len(prices), figsize=(5 * len(prices), 4), squeeze=False)
    for ax, price in zip(axes[0], prices, strict=False):
        for name, r in results.items():
            if price not in r["prices"]:
                continue
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
