"""An evaluation's results for people and programs: per-arm figures with their spread
over seeds, the learning curve, a table that fits 80 columns, JSON, and a plot.

Every ratio is against the baseline arm of the same evaluation and seed (all-eager
when it ran, else the first arm), so the figures compare arms that saw the same
sessions. With several seeds each figure is the mean of the seeds' figures, and its
spread (``spread`` in the JSON, ``±`` in the table) their standard deviation.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from greenroom_lab.eval.arms import ARMS, BASELINE
from greenroom_lab.eval.results import SessionResult
from greenroom_lab.plots import pyplot

WINDOWS = 10
"""Points of the learning curve: the sessions in this many consecutive windows."""

SHOWN_ERRORS = 3
"""Distinct error messages (a model's, a checker's) kept per arm in the report."""

SPREAD_KEYS = (
    "success",
    "searches_per_session",
    "steps_per_session",
    "input_tokens_per_session",
    "cost_per_session",
    "cost_no_cache_per_session",
    "cost_ratio",
    "tokens_ratio",
    "cache_read_share",
    "invalid_calls_per_session",
    "prefix_changes",
)
"""The figures that are means over seeds, each with its spread."""


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def window_figures(results: Sequence[SessionResult]) -> dict[str, float]:
    asked = sum(r.asked for r in results)
    return {
        "success": sum(r.done for r in results) / asked if asked else 0.0,
        "searches": _mean([r.searches for r in results]),
        "steps": _mean([r.steps for r in results]),
        "input_tokens": _mean([r.input_tokens for r in results]),
        "cost": _mean([r.cost for r in results]),
        "cost_no_cache": _mean([r.cost_no_cache for r in results]),
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


def _ratio(value: float, base: float, base_whole: bool) -> float | None:
    return value / base if base and base_whole else None


def seed_figures(results: Sequence[SessionResult], base: Sequence[SessionResult]) -> dict[str, Any]:
    """One arm's figures for one seed, ratios against that seed's baseline (none when the
    baseline had a session past the context window: it never paid for what it sent)."""
    fig, of_base = window_figures(results), window_figures(base)
    whole = not any(r.over_window for r in base)
    total_in = sum(r.input_tokens for r in results)
    return {
        "success": fig["success"],
        "searches_per_session": fig["searches"],
        "steps_per_session": fig["steps"],
        "input_tokens_per_session": fig["input_tokens"],
        "cost_per_session": fig["cost"],
        "cost_no_cache_per_session": fig["cost_no_cache"],
        "cost_ratio": _ratio(fig["cost"], of_base["cost"], whole),
        "tokens_ratio": _ratio(fig["input_tokens"], of_base["input_tokens"], whole),
        "cache_read_share": sum(r.cached_tokens for r in results) / total_in if total_in else 0.0,
        "invalid_calls_per_session": _mean([r.invalid_calls for r in results]),
        "prefix_changes": prefix_changes(results),
    }


def _over_seeds(per_seed: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, float | None]]:
    means: dict[str, Any] = {}
    spread: dict[str, float | None] = {}
    for key in SPREAD_KEYS:
        values = [f[key] for f in per_seed]
        if any(v is None for v in values) or not values:
            means[key], spread[key] = None, None
            continue
        means[key] = _mean(values)
        spread[key] = statistics.stdev(values) if len(values) > 1 else 0.0
    return means, spread


def _mean_curve(curves: Sequence[list[dict[str, float]]]) -> list[dict[str, float]]:
    """The seeds' curves averaged point by point (every seed has as many sessions)."""
    points = [p for p in zip(*curves, strict=False)]
    return [{k: _mean([p[k] for p in point]) for k in point[0]} for point in points]


def summarize(by_seed: Mapping[int, Mapping[str, Sequence[SessionResult]]]) -> dict[str, Any]:
    """The report: ``{"baseline", "seeds", "arms": [...]}`` with each arm's figures (means
    over seeds), their ``spread``, each seed's own (``per_seed``), the counts of errors,
    and the curve."""
    first = next(iter(by_seed.values()), {})
    baseline = BASELINE if first.get(BASELINE) else next(iter(first), BASELINE)
    arms = []
    for name in first:
        per_seed = [seed_figures(runs[name], runs.get(baseline, [])) for runs in by_seed.values()]
        means, spread = _over_seeds(per_seed)
        results = [r for runs in by_seed.values() for r in runs[name]]
        arm = ARMS[name]
        arms.append(
            {
                "name": name,
                "strategy": arm.strategy,
                "priors": arm.priors,
                "sessions": len(results),
                **means,
                "spread": spread,
                "per_seed": [{"seed": seed, **f} for seed, f in zip(by_seed, per_seed, strict=True)],
                "errors": sum(r.stop_reason == "error" or bool(r.error) for r in results),
                "check_errors": sum(bool(r.error) and r.stop_reason != "error" for r in results),
                "over_window": sum(bool(r.over_window) for r in results),
                "largest_refused": max((r.over_window for r in results), default=0),
                # a request past the window is said once, on its own line, not as a message per size
                "error_messages": list(dict.fromkeys(r.error for r in results if r.error and not r.over_window))[
                    :SHOWN_ERRORS
                ],
                "curve": _mean_curve([curve(list(runs[name])) for runs in by_seed.values()]),
            }
        )
    return {"baseline": baseline, "seeds": list(by_seed), "arms": arms}


def _fixed(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _tokens(value: float) -> str:
    return f"{value / 1000:,.0f}k" if value >= 100_000 else f"{value:,.0f}"


def _cells(a: Mapping[str, Any]) -> tuple[str, ...]:
    return (
        f"{a['success']:.0%}",
        _fixed(a["searches_per_session"], 2),
        f"{a['input_tokens_per_session']:,.0f}",
        _fixed(a["cost_per_session"], 4),
        _fixed(a["cost_no_cache_per_session"], 4),
        _fixed(a["cost_ratio"], 3),
    )


def _spread_cells(a: Mapping[str, Any]) -> tuple[str, ...]:
    sd = a["spread"]

    def pm(text: str) -> str:
        return "-" if text == "-" else "±" + text

    return (
        pm(f"{100 * sd['success']:.0f}") if sd["success"] is not None else "-",
        pm(_fixed(sd["searches_per_session"], 2)),
        pm(_tokens(sd["input_tokens_per_session"])) if sd["input_tokens_per_session"] is not None else "-",
        pm(_fixed(sd["cost_per_session"], 4)),
        pm(_fixed(sd["cost_no_cache_per_session"], 4)),
        pm(_fixed(sd["cost_ratio"], 3)),
    )


def _say_stream(console: Console, report: Mapping[str, Any]) -> None:
    """What the stream was: how many requests, and how many worded as an earlier one."""
    mix, streams = report.get("settings", {}).get("mix"), list(report.get("stream", {}).values())
    if not mix or not streams:
        return
    asked = sum(s["requests"] for s in streams)
    repeated = sum(s["repeated"] for s in streams)
    console.print(
        f"stream {mix['stream']}: {asked:,} requests, {mix['requests']} a session; "
        f"{repeated:,} ({repeated / asked if asked else 0:.0%}) worded as an earlier one",
        highlight=False,
    )


def print_report(console: Console, report: dict[str, Any], title: str) -> None:
    """One row per arm (and one of ± under it with several seeds); sized for 80 columns
    (short headers, no vertical rules; steps and the other figures are in the JSON)."""
    seeds = len(report.get("seeds") or [0])
    spread = f"; ± over {seeds} seeds (standard deviation)" if seeds > 1 else ""
    table = Table(
        title=escape(title),
        caption=f"per session; cost $ with the prompt cache, no cache: $ without it; x base: cost over "
        f"{report['baseline']}'s{spread}",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    headers = ("arm", "success", "searches", "input tok", "cost $", "no cache", "x base")
    for i, col in enumerate(headers):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    for a in report["arms"]:
        table.add_row(escape(a["name"]), *_cells(a))
        if seeds > 1:
            table.add_row("", *_spread_cells(a), style="dim")
    console.print(table)
    _say_stream(console, report)
    for a in report["arms"]:
        if a["over_window"]:
            console.print(
                f"[yellow]{escape(a['name'])}: {a['over_window']} sessions ended at a request past the context "
                f"window of {a.get('context_window', 0):,} tokens ({a['largest_refused']:,} at most; not sent)[/]",
                highlight=False,
            )
        others = a["errors"] - a["over_window"]
        if others:
            checks = f" ({a['check_errors']} of them a failed task check)" if a.get("check_errors") else ""
            console.print(
                f"[yellow]{escape(a['name'])}: {others} sessions ended in an error{checks}[/]", highlight=False
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
