"""Result tokens before and after compaction, on the real MCP servers the tests run.

Each case is one real call of a real server (mcp-server-time and mcp-server-git from
PyPI, the reference server ``everything`` from npm when it is installed): its result as
greenroom reads it from the server, then as the model gets it after compaction (the run's
own ``greenroom.results.fitting.compacted``: JSON minified, null and empty fields left
out). Counts are exact o200k tokens; ratios are after / before, measured in the same run.
A text result that is no JSON document is sent as it came (ratio 1.000), and counts too.
The shared datasets (../shared/datasets) hold tool definitions and queries, no results,
so they have no case here.

    python benchmarks/results.py [--json out.json] [--figures]

``--figures`` writes docs/figures/results.json and rewrites the docs' tables that show
them (``benchmarks/figures.py``). ``GREENROOM_MCP_EVERYTHING`` names server-everything's
entry script (``.ci/run`` installs it into .ci/node, where it is also looked for).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from greenroom import abuild_runtime
from greenroom.config import ResultsConfig
from greenroom.results.fitting import compacted
from greenroom.tokens.counting import count_tokens
from greenroom.tools import ToolCallContext

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = (
    ROOT / ".ci" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
)

CASES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "time": [
        ("get_current_time", {"timezone": "Europe/Paris"}),
        ("convert_time", {"source_timezone": "Europe/Paris", "time": "12:30", "target_timezone": "Asia/Tokyo"}),
    ],
    "git": [
        ("git_status", {"repo_path": "{repo}"}),
        ("git_log", {"repo_path": "{repo}", "max_count": 5}),
        ("git_show", {"repo_path": "{repo}", "revision": "HEAD"}),
        ("git_branch", {"repo_path": "{repo}", "branch_type": "local"}),
    ],
    "everything": [
        ("get-env", {}),
        ("get-structured-content", {"location": "New York"}),
        ("get-sum", {"a": 2, "b": 3}),
        ("echo", {"message": "hello"}),
        ("get-annotated-message", {"messageType": "success", "includeImage": False}),
        ("get-resource-links", {"count": 3}),
        ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
        ("simulate-research-query", {"topic": "tool search", "ambiguous": False}),
    ],
}
"""Per server, the calls made (arguments as the tool's schema asks; ``{repo}`` is a
repository of a few commits made for the run)."""


def everything_script() -> str | None:
    found = os.environ.get("GREENROOM_MCP_EVERYTHING") or (str(EVERYTHING) if EVERYTHING.exists() else "")
    return found if found and Path(found).exists() and shutil.which("node") else None


def make_repo(folder: Path) -> Path:
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]
    repo = folder / "repo"
    subprocess.run([*git, "init", "-q", "-b", "main", str(repo)], check=True)
    for k in range(3):
        (repo / f"notes-{k}.md").write_text(f"# notes {k}\n\nline one\nline two\n", encoding="utf-8")
        subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
        subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", f"notes {k}"], check=True)
    (repo / "notes-0.md").write_text("changed\n", encoding="utf-8")
    return repo


def config_text(repo: Path, everything: str | None) -> str:
    py = json.dumps(sys.executable)
    servers = {
        "time": f'command = {py}\nargs = ["-m", "mcp_server_time", "--local-timezone", "UTC"]',
        "git": f'command = {py}\nargs = ["-m", "mcp_server_git", "--repository", {json.dumps(str(repo))}]',
    }
    if everything is not None:
        servers["everything"] = f'command = "node"\nargs = [{json.dumps(everything)}, "stdio"]'
    body = "".join(f'[[tools.mcp]]\nname = "{n}"\ndefer = false\nstart = "eager"\n{s}\n' for n, s in servers.items())
    return '[agent]\nmodel = "scripted:"\n[plugins]\nenable = ["scripted"]\n' + body


async def measure(folder: Path) -> dict[str, Any]:
    repo = make_repo(folder)
    everything = everything_script()
    config = folder / "bench.toml"
    config.write_text(config_text(repo, everything), encoding="utf-8")
    rt = await abuild_runtime(config)
    settings = ResultsConfig()
    servers = []
    try:
        for server, calls in CASES.items():
            if server == "everything" and everything is None:
                continue
            rows = []
            for tool, arguments in calls:
                name = f"{server}__{tool}"
                args = {k: str(repo) if v == "{repo}" else v for k, v in arguments.items()}
                raw = await rt.tools[name].execute(args, ToolCallContext(call_id=tool, run_id="bench", tool_name=name))
                lean = await compacted(raw, name, settings)
                rows.append({"tool": tool, "before": count_tokens(raw.content), "after": count_tokens(lean.content)})
            servers.append({"name": server, "calls": rows})
    finally:
        await rt.aclose()
    return {"settings": {"compact": settings.compact}, "servers": servers}


def keep_costs(megabytes: int = 5, repeat: int = 5) -> dict[str, Any]:
    """What keeping costs beside cutting alone (without the read-result plugin), and what
    one read of the kept result takes: medians of ``repeat`` runs, milliseconds. Keeping is
    the plugin's ``greenroom_result_cut`` work: the file written, the lines counted for the
    note, and the note rendered again with its sentence."""
    import attrs

    from greenroom.run.limits import bound_result, rendered
    from greenroom.tools import ToolResult
    from greenroom_results.kept import KeptResults
    from greenroom_results.plugin import ReadResultConfig, how_to_read
    from greenroom_results.reading import _read, line_starts

    lines = megabytes * 1_000_000 // 40
    text = "\n".join(f"{k:07d} {'ERROR upstream reset' if k % 10_007 == 0 else 'INFO request handled in 12 ms'}"
                      for k in range(1, lines + 1))  # fmt: skip
    result, store, settings, limit = ToolResult(text), KeptResults(), ReadResultConfig(), 25_000

    def median_ms(work: Any) -> float:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            work()
            times.append((time.perf_counter() - started) * 1000)
        return round(statistics.median(times), 1)

    def cut_and_keep() -> None:
        _, cut = bound_result(result, limit)
        assert cut is not None
        sizes = {"max_bytes": settings.max_kept_bytes, "session_bytes": settings.max_session_bytes}
        store.keep("bench", "c1", "logs", text, **sizes)
        rendered(text, attrs.evolve(cut, advice=how_to_read("c1", line_starts(text), cut)))

    cut = median_ms(lambda: bound_result(result, limit))
    kept = median_ms(cut_and_keep)
    pattern = median_ms(lambda: _read("bench", (), "c1", None, None, r"ERROR \w+", limit))
    offset = median_ms(lambda: _read("bench", (), "c1", lines // 2, 200, None, limit))
    return {"megabytes": megabytes, "lines": lines, "cut_ms": cut, "cut_and_keep_ms": kept,
            "read_pattern_ms": pattern, "read_offset_ms": offset}  # fmt: skip


def totals(rows: list[dict[str, Any]], json_only: bool = False) -> tuple[int, int]:
    picked = [r for r in rows if not json_only or r["after"] < r["before"]]
    return sum(r["before"] for r in picked), sum(r["after"] for r in picked)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    ap.add_argument("--figures", action="store_true", help="write docs/figures/results.json and the docs' tables")
    args = ap.parse_args(argv)
    console = Console()
    with tempfile.TemporaryDirectory(prefix="greenroom-results-bench-") as tmp:
        os.environ.setdefault("GREENROOM_HOME", str(Path(tmp) / "home"))  # listings cached here, not in yours
        results = anyio.run(measure, Path(tmp))
        results["kept"] = keep_costs()
    table = Table(title="result tokens (exact o200k) before and after compaction; ratio after / before")
    for col in ("server", "tool", "before", "after", "ratio"):
        table.add_column(col, justify="left" if col in ("server", "tool") else "right")
    for server in results["servers"]:
        for r in server["calls"]:
            table.add_row(
                server["name"], r["tool"], f"{r['before']:,}", f"{r['after']:,}", f"{r['after'] / r['before']:.3f}"
            )
        before, after = totals(server["calls"])
        table.add_row(server["name"], "all calls", f"{before:,}", f"{after:,}", f"{after / before:.3f}", style="bold")
    console.print(table)
    k = results["kept"]
    console.print(
        f"a {k['megabytes']} MB result ({k['lines']:,} lines) over 25,000 tokens: cut {k['cut_ms']} ms, cut and kept "
        f"{k['cut_and_keep_ms']} ms ({k['cut_and_keep_ms'] / k['cut_ms']:.1f}x); read back by pattern "
        f"{k['read_pattern_ms']} ms, by offset {k['read_offset_ms']} ms (medians)"
    )
    if not any(s["name"] == "everything" for s in results["servers"]):
        hint = "npm install --prefix .ci/node @modelcontextprotocol/server-everything@2026.8.31"
        console.print(f"[yellow]server-everything is not installed: {hint} (or set GREENROOM_MCP_EVERYTHING)[/]")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    if args.figures:
        import figures as docs_figures  # beside this script

        console.print(f"written {docs_figures.save('results', results)}")
        docs_figures.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
