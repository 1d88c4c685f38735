"""Tables and the plot of ``benchmarks/scale.py``'s results.

One narrow table per measurement, so the whole report reads at 80 columns (and as plain
text in a pipe). A measurement that failed shows ``failed [n]`` in its row, and note n
under the tables says where. The plot draws each cost against catalog size (log x).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

Results = dict[str, Any]


def _num(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"


def _x(value: float) -> str:
    return f"{value:,.1f}x" if value < 100 else f"{value:,.0f}x"


class Report:
    """Collects the rows of every table and the notes of what failed."""

    def __init__(self, results: Results) -> None:
        self.results = results
        self.sizes: list[int] = results["sizes"]
        self.notes: list[str] = []

    def part(self, size: int, name: str) -> dict[str, Any] | None:
        return self.results["by_size"].get(str(size), {}).get(name)

    def failed(self, what: str, part: dict[str, Any]) -> str:
        """The cell of a failed row; one note per failure, however many tables show it."""
        text = f"{what}: {part['error']}"
        if text not in self.notes:
            self.notes.append(text)
        return f"failed [{self.notes.index(text) + 1}]"

    def smallest(self, name: str, key: str) -> float | None:
        """``key`` of measurement ``name`` at the smallest size that has it."""
        for size in self.sizes:
            part = self.part(size, name)
            if part and "error" not in part:
                return float(part[key])
        return None

    def table(
        self, title: str, columns: list[str], row: Callable[[int, dict[str, Any]], list[str]], name: str
    ) -> Table:
        table = Table(title=title)
        for i, col in enumerate(columns):
            table.add_column(col, justify="left" if i == 0 else "right")
        for size in self.sizes:
            part = self.part(size, name)
            if part is None:
                continue
            if "error" in part:
                cells = [self.failed(f"{size:,} tools, {name}", part)]
                table.add_row(f"{size:,}", *cells, *[""] * (len(columns) - 2))
            else:
                table.add_row(f"{size:,}", *row(size, part))
        return table


def _session_tables(r: Report, part: str, what: str) -> list[Table]:
    """Start-up time and peak memory of ``greenroom run`` in new processes."""
    cold, warm, peak = r.smallest(part, "cold_ms"), r.smallest(part, "warm_ms"), r.smallest(part, "peak_mb")
    return [
        r.table(
            f"Session start, `greenroom run` whose model {what} (target: 100k 3x warm, 5x cold)",
            ["tools", "cold ms", "warm ms", "cold x smallest", "warm x smallest"],
            lambda n, p: [
                _num(p["cold_ms"], 0),
                _num(p["warm_ms"], 0),
                _x(p["cold_ms"] / cold) if cold else "-",
                _x(p["warm_ms"] / warm) if warm else "-",
            ],
            part,
        ),
        r.table(
            f"Peak memory of `greenroom run` whose model {what} (target: 100k at most 3x 1k)",
            ["tools", "peak MB, cold", "peak MB, warm", "x smallest"],
            lambda n, p: [
                _num(p["cold_peak_mb"], 0),
                _num(p["warm_peak_mb"], 0),
                _x(p["peak_mb"] / peak) if peak else "-",
            ],
            part,
        ),
    ]


def _first_search_table(r: Report) -> Table:
    """The searching run's ToolSearch apart: cold, mostly the ranking plugin building its
    index; the rest of the run is what core and the other plugins cost."""
    rest = [
        (size, p["cold_ms"] - p["cold_search_ms"])
        for size in r.sizes
        if (p := r.part(size, "session_search")) and "error" not in p and "cold_search_ms" in p
    ]
    base = rest[0][1] if rest else None
    return r.table(
        "The searching run's ToolSearch (cold: the ranking index is built) and the rest, cold",
        ["tools", "search ms, cold", "search ms, warm", "rest ms", "rest x smallest"],
        lambda n, p: (
            [
                _num(p["cold_search_ms"], 0),
                _num(p["warm_search_ms"], 0),
                _num(p["cold_ms"] - p["cold_search_ms"], 0),
                _x((p["cold_ms"] - p["cold_search_ms"]) / base) if base else "-",
            ]
            if "cold_search_ms" in p
            else ["-", "-", "-", "-"]
        ),
        "session_search",
    )


def _indexed_table(r: Report) -> Table:
    """The searching run after ``greenroom rank index`` (a deploy step) against the same
    run cold: its first search reads the indexes instead of building them."""
    return r.table(
        "The searching run after `greenroom rank index`, against it cold (target: search as warm)",
        ["tools", "rank index ms", "search ms", "search x cold", "run x cold"],
        lambda n, p: (
            [
                _num(p["rank_index_ms"], 0),
                _num(p["indexed_search_ms"], 0),
                f"{p['indexed_search_ms'] / p['cold_search_ms']:.2f}x",
                f"{p['indexed_ms'] / p['cold_ms']:.2f}x",
            ]
            if "indexed_search_ms" in p
            else ["-", "-", "-", "-"]
        ),
        "session_search",
    )


def _rebuild_table(r: Report) -> Table:
    part = r.results.get("rebuild")
    tools = f"{part['tools']:,} " if part else ""
    table = Table(title=f"A runtime of {tools}tools built again in one process (target: as fast)")
    for i, col in enumerate(["build", "ms", "x first", "objects tracked after"]):
        table.add_column(col, justify="left" if i == 0 else "right")
    if part is None:
        return table
    if "error" in part:
        table.add_row("rebuild", r.failed("rebuilt runtime", part), "", "")
        return table
    for i, (ms, ratio, tracked) in enumerate(zip(part["build_ms"], part["ratios"], part["tracked"], strict=True)):
        table.add_row(["1st", "2nd", "3rd"][i] if i < 3 else f"{i + 1}th", _num(ms, 0), _x(ratio), f"{tracked:,}")
    return table


def _alone(p: dict[str, Any]) -> list[str]:
    # results saved before bm25s was also timed in the run have only the tight loop's time
    if "bm25s_alone_p50_ms" not in p:
        return ["", ""]
    return [_num(p["bm25s_alone_p50_ms"], 2), _x(p["ratio_alone"])]


def tables(results: Results) -> tuple[list[Table], list[str]]:
    """Every table of the report and the notes on what failed."""
    r = Report(results)
    out = [
        r.table(
            "ToolSearch p50 vs plain bm25s, in the run and alone (target: at most 3x)",
            ["tools", "search ms", "bm25s ms", "x bm25s", "alone ms", "x alone", "1st ms"],
            lambda n, p: [
                _num(p["p50_ms"], 2),
                _num(p["bm25s_p50_ms"], 2),
                _x(p["ratio"]),
                *_alone(p),
                _num(p["first_ms"], 0),
            ],
            "search",
        )
    ]
    steps = Table(title="Per-step cost vs a bare loop (target: flat in size)")
    for i, col in enumerate(["tools", "strategy", "µs/step", "x bare", "x smallest"]):
        steps.add_column(col, justify="left" if i < 2 else "right")
    bare = results.get("bare_step_us")
    for size in r.sizes:
        for strategy, part in (r.part(size, "steps") or {}).items():
            if "error" in part:
                steps.add_row(f"{size:,}", strategy, r.failed(f"{size:,} tools, {strategy} steps", part), "", "")
                continue
            first = _first_step(r, strategy)
            flat = _x(part["step_us"] / first) if first else "-"
            steps.add_row(f"{size:,}", strategy, _num(part["step_us"], 0), _x(part["ratio"]), flat)
    if bare is not None:
        steps.title = f"{steps.title}; bare: {bare:,.1f} µs/step"
    out.append(steps)
    for part, what in (("session", "answers at once"), ("session_search", "searches first")):
        out.extend(_session_tables(r, part, what))
    out.append(_first_search_table(r))
    out.append(_indexed_table(r))
    out.append(_rebuild_table(r))
    out.append(
        r.table(
            "Unknown tool name: the error with its 'did you mean'",
            ["tools", "error ms", "x known call", "x dict lookup", "meant one named"],
            lambda n, p: [
                _num(p["miss_ms"], 2),
                _x(p["ratio_known"]),
                _x(p["ratio_dict"]),
                f"{p['suggested']}/{p['misses']}",
            ],
            "misspelled",
        )
    )
    out.append(
        r.table(
            "Listing in the system prompt vs listing_budget",
            ["tools", "tokens", "x budget", "groups named", "tools named"],
            lambda n, p: [
                f"{p['tokens']:,}",
                f"{p['ratio']:.2f}x",
                f"{p['groups_named']:,}/{p['groups']:,}",
                f"{p['tools_named']:,}/{p['tools']:,}",
            ],
            "listing",
        )
    )
    out.append(_startup_table(r))
    return out, r.notes


def _first_step(r: Report, strategy: str) -> float | None:
    for size in r.sizes:
        part = (r.part(size, "steps") or {}).get(strategy)
        if part and "error" not in part:
            return float(part["step_us"])
    return None


def _startup_table(r: Report) -> Table:
    table = Table(title="Start-up in a new process vs `python -c 'import pluggy'`")
    for i, col in enumerate(["what", "ms", "x pluggy", "target"]):
        table.add_column(col, justify="left" if i in (0, 3) else "right")
    part = r.results.get("startup")
    if part is None:
        return table
    if "error" in part:
        table.add_row("start-up", r.failed("start-up", part), "", "")
        return table
    table.add_row("import pluggy", _num(part["pluggy_ms"], 0), "1.0x", "")
    table.add_row("tokenizer load (in process)", _num(part["tokenizer_load_ms"], 0), "", "at most 100 ms")
    table.add_row("tokenizer, whole process", _num(part["tokenizer_process_ms"], 0), _x(part["tokenizer_ratio"]), "")
    table.add_row("greenroom --help", _num(part["help_ms"], 0), _x(part["help_ratio"]), "at most 5x")
    return table


def print_report(console: Console, results: Results) -> None:
    """Every table, its title on a line of its own (a title as wide as its table would
    wrap); in a pipe the tables are Markdown, ready to paste into docs/performance.md."""
    found, notes = tables(results)
    for table in found:
        if not table.row_count:
            continue  # a measurement left out with --only
        title, table.title = str(table.title or ""), None
        if console.is_terminal:
            console.print(title, style="bold", markup=False, highlight=False)
            console.print(table)
        else:
            console.file.write(f"**{title}**\n\n")
            table.box = box.MARKDOWN
            with console.capture() as captured:
                console.print(table)
            # the Markdown box draws its top and bottom edges as lines of blanks
            lines = [line.rstrip() for line in captured.get().splitlines() if line.strip()]
            console.file.write("\n".join(lines) + "\n")
        console.print()
    for i, note in enumerate(notes, 1):
        console.print(f"[{i}] {note}", markup=False, highlight=False)


def _series(results: Results, name: str, key: str, sub: str | None = None) -> tuple[list[int], list[float]]:
    xs: list[int] = []
    ys: list[float] = []
    for size in results["sizes"]:
        part = results["by_size"].get(str(size), {}).get(name)
        if part is not None and sub is not None:
            part = part.get(sub)
        if part and "error" not in part:
            xs.append(size)
            ys.append(float(part[key]))
    return xs, ys


PANELS: list[tuple[str, str, list[tuple[str, str, str | None, str]]]] = [
    # title, y label, [(measurement, key, sub-measurement, legend)]
    (
        "ToolSearch p50",
        "ms",
        [
            ("search", "p50_ms", None, "ToolSearch"),
            ("search", "bm25s_p50_ms", None, "bm25s in the run"),
            ("search", "bm25s_alone_p50_ms", None, "bm25s alone"),
        ],
    ),
    (
        "Per-step cost",
        "µs/step",
        [("steps", "step_us", s, s) for s in ("dispatch", "inject", "native")],
    ),
    (
        "Session start (new process)",
        "ms",
        [
            ("session", "cold_ms", None, "cold cache"),
            ("session", "warm_ms", None, "warm cache"),
            ("session_search", "cold_ms", None, "searching, cold"),
            ("session_search", "warm_ms", None, "searching, warm"),
        ],
    ),
    (
        "Peak memory of a run",
        "MB",
        [
            ("session", "cold_peak_mb", None, "cold cache"),
            ("session", "warm_peak_mb", None, "warm cache"),
            ("session_search", "cold_peak_mb", None, "searching, cold"),
            ("session_search", "warm_peak_mb", None, "searching, warm"),
        ],
    ),
    (
        "Unknown tool name",
        "ms",
        [("misspelled", "miss_ms", None, "unknown name"), ("misspelled", "known_ms", None, "known tool")],
    ),
    ("Listing", "tokens", [("listing", "tokens", None, "listing")]),
]


def _short(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def plot(results: Results, path: Path) -> None:
    """Each cost against catalog size (log x), one panel per measurement; a panel whose
    values span more than a decade or so has a log y axis too."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    fig, axes = plt.subplots(2, 3, figsize=(11, 6.5))
    for ax, (title, unit, lines) in zip(axes.flat, PANELS, strict=True):
        for name, key, sub, label in lines:
            xs, ys = _series(results, name, key, sub)
            if xs:
                ax.plot(xs, ys, marker="o", label=label)
        if results.get("bare_step_us") and title == "Per-step cost":
            ax.axhline(results["bare_step_us"], color="grey", linestyle=":", label="bare loop")
        if title == "Listing" and results.get("sizes"):
            budget = _series(results, "listing", "budget")[1]
            if budget:
                ax.axhline(budget[0], color="grey", linestyle=":", label="listing_budget")
        ax.set_xscale("log")
        ax.set_xticks(results["sizes"], [_short(n) for n in results["sizes"]])
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ys = [y for line in ax.lines for y in line.get_ydata() if y > 0]
        if ys and max(ys) / min(ys) > 20:  # over a decade or so apart: log, else lines look flat
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        else:
            ax.set_ylim(bottom=0)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("tools in the catalog", fontsize=8)
        ax.set_ylabel(unit, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="major", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
    fig.suptitle("greenroom at scale: cost against catalog size", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=72)
    plt.close(fig)
