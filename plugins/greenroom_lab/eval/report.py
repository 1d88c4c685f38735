"""An evaluation's results for people and programs: per-arm figures, the learning curve,
a table that fits 80 columns, JSON, and a plot.

Every ratio is against the baseline arm of the same evaluation (all-eager when it ran,
else the first arm), so the figures compare arms that saw the same sessions.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from greenroom_lab.eval.arms import ARMS, BASELINE
from greenroom_lab.eval.runner import SessionResult
from greenroom_lab.plots import pyplot

WINDOWS = 10
"""Points of the learning curve: the sessions in this many consecutive windows."""

SHOWN_ERRORS = 3
"""Distinct error messages (a model's, a checker's) kept per arm in the report."""


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def window_figures(results: Sequence[SessionResult]) -> dict[str, float]:
    return {
        "success": _mean([float(r.success) for r in results]),
        "searches": _mean([r.searches for r in results]),
        "steps": _mean([r.steps for r in results]),
        "input_tokens": _mean([r.input_tokens for r in results]),
        "cost": _mean([r.cost for r in results]),
    }


def prefix_changes(results: Sequence[SessionResult]) -> int:
    """How many sessions ended on another cacheable prefix (tools and system prompt) than
    the session before: each change is a prompt-cache write on a caching provider."""
    prefixes = [r.tail.prefix_hash for r in results if r.tail is not None]
    return sum(a != b for a, b in itertools.pairwise(prefixes))


def curve(results: Sequence[SessionResult], windows: int = WINDOWS) -> list[dict[str, float]]:
    """Figures per window of consecutive sessions: how an arm changes as sessions accumulate."""
    if not results:
        return []
    size = max(1, -(-len(results) // windows))
    out = []
    for start in range(0, len(results), size):
        chunk = results[start : start + size]
        out.append({"sessions": start + len(chunk), **window_figures(chunk)})
    return out


def summarize(by_arm: dict[str, list[SessionResult]]) -> dict[str, Any]:
    """The report: ``{"baseline", "arms": [...]}`` with each arm's figures and curve."""
    baseline = BASELINE if by_arm.get(BASELINE) else next(iter(by_arm), BASELINE)
    base = window_figures(by_arm.get(baseline, []))
    arms = []
    for name, results in by_arm.items():
        arm = ARMS[name]
        fig = window_figures(results)
        total_in = sum(r.input_tokens for r in results)
        arms.append(
            {
                "name": name,
                "strategy": arm.strategy,
                "priors": arm.priors,
                "sessions": len(results),
                "success": fig["success"],
                "searches_per_session": fig["searches"],
                "steps_per_session": fig["steps"],
                "input_tokens_per_session": fig["input_tokens"],
                "cost_per_session": fig["cost"],
                "cost_ratio": fig["cost"] / base["cost"] if base["cost"] else None,
                "tokens_ratio": fig["input_tokens"] / base["input_tokens"] if base["input_tokens"] else None,
                "cache_read_share": sum(r.cached_tokens for r in results) / total_in if total_in else 0.0,
                "invalid_calls_per_session": _mean([r.invalid_calls for r in results]),
                "prefix_changes": prefix_changes(results),
                "errors": sum(r.stop_reason == "error" or bool(r.error) for r in results),
                "check_errors": sum(bool(r.error) and r.stop_reason != "error" for r in results),
                "error_messages": list(dict.fromkeys(r.error for r in results if r.error))[:SHOWN_ERRORS],
                "curve": curve(results),
            }
        )
    return {"baseline": baseline, "arms": arms}


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_report(console: Console, report: dict[str, Any], title: str) -> None:
    """One row per arm; sized for 80 columns (short headers, no vertical rules)."""
    table = Table(
        title=escape(title),
        caption=f"per session; x base: cost over {report['baseline']}'s",
        box=box.SIMPLE_HEAD,
    )
    headers = ("arm", "success", "searches", "steps", "input tok", "cost $", "x base")
    for i, col in enumerate(headers):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for a in report["arms"]:
        table.add_row(
            escape(a["name"]),
            f"{a['success']:.0%}",
            f"{a['searches_per_session']:.2f}",
            f"{a['steps_per_session']:.2f}",
            f"{a['input_tokens_per_session']:,.0f}",
            f"{a['cost_per_session']:.4f}",
            _ratio(a["cost_ratio"]),
        )
    console.print(table)
    for a in report["arms"]:
        if a["errors"]:
            checks = f" ({a['check_errors']} of them a failed task check)" if a.get("check_errors") else ""
            console.print(
                f"[yellow]{escape(a['name'])}: {a['errors']} sessions ended in an error{checks}[/]", highlight=False
            )
            for message in a.get("error_messages", ()):  # a checker's name can read as an emoji code
                console.print(f"[yellow]  {escape(message)}[/]", highlight=False, emoji=False)
        if a.get("retries"):
            console.print(f"{escape(a['name'])}: {a['retries']} provider calls retried", highlight=False)


def plot_curves(report: dict[str, Any], path: Path, title: str) -> None:
    """Searches and input tokens per session as sessions accumulate, one line per arm."""
    plt = pyplot()
    panels = (
        ("searches", "searches per session"),
        ("input_tokens", "input tokens per session"),
        ("success", "task success"),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (key, label) in zip(axes[0], panels, strict=True):
        for a in report["arms"]:
            points = a["curve"]
            ax.plot([p["sessions"] for p in points], [p[key] for p in points], marker="o", label=a["name"])
        ax.set_xlabel("sessions so far")
        ax.set_ylabel(label)
        if key == "input_tokens":
            ax.set_yscale("log")  # all-eager is often 10-30x the others
        ax.grid(alpha=0.3)
    axes[0][0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
