"""Scale benchmark for one MCP server that lists 1k, 10k and 100k tools (issue 28).

The server is real: the official ``mcp`` SDK's low-level server over stdio (this file,
run with ``--serve``), started by greenroom as a configured ``[[tools.mcp]]`` server. It
lists the tools of the catalogs ``scale_catalog`` builds from ``../shared/datasets``
(real descriptions and schemas, renamed copies past 4,392 tools) in pages of
``--page-size`` tools with a cursor, as paginating servers do. It keeps each tool as its
line of JSON and builds one page at a time, so its own memory stays small (on Linux the
peak RSS a parent reaps counts its children's too).

Measured in new processes (``scale_process.run_child``: wall time and peak RSS), every
figure also as a ratio against the smallest size of the same run:

- the server alone (a bare JSON-RPC client lists it), and the server with the SDK's own
  client (``ClientSession.list_tools``, no greenroom): what a run cannot go below;
- ``greenroom run CONFIG hi`` with the scripted model answering at once, and making one
  ToolSearch first; cold (a fresh ``GREENROOM_HOME``: no listing cache, so the server is
  started and listed) and warm (the same home after one run);
- ``greenroom config check``: the catalog-file form ``scale.py`` uses (cold and warm
  home), and the MCP form (the listing cache filled by a run, and ``--connect``), with
  the exit code.

``--compare TREE`` runs every child a second time, in turns, with ``PYTHONPATH`` set to
``TREE/core:TREE/plugins`` (a ``git worktree`` of an earlier commit): "before" and "after"
in the same run. ``--now TREE`` does the same for "now" (a tree with one change only,
when others are in progress in the checkout).

    python benchmarks/scale_mcp.py [--sizes 1000,10000,100000] [--quick] [--json [PATH]]
                                   [--compare /tmp/wt-before] [--now /tmp/wt-after] [--page-size 1000]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SEARCH_QUERY = "book a flight to paris"


# -- the server (``--serve``): only the SDK is imported -----------------------------------
def serve(catalog: Path, page_size: int) -> None:
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    data = catalog.read_bytes()
    lines = [line for line in data.split(b"\n") if line.strip()]
    del data

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        tools = []
        for line in lines[start : start + page_size]:
            record = json.loads(line)
            schema = record.get("parameters") or {"type": "object", "properties": {}}
            tools.append(types.Tool(name=record["name"], description=record["description"], input_schema=schema))
        end = start + page_size
        return types.ListToolsResult(tools=tools, next_cursor=str(end) if end < len(lines) else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=f"called {params.name}")])

    server: Server[Any] = Server(
        "greenroom-scale-mcp",
        instructions=f"{len(lines):,} tools from the evaluation datasets, for greenroom's scale benchmark.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


# -- the measurements -----------------------------------------------------------------------
def write_mcp_config(folder: Path, catalog: Path, label: str, page_size: int, *, search: str = "") -> Path:
    """A config with one MCP server listing ``catalog``, and the scripted model (answering
    at once, or making one ToolSearch first)."""
    model = "scripted"
    if search:
        script = folder / f"{label}.jsonl"
        turns = [{"tool_calls": [{"name": "ToolSearch", "arguments": {"query": search}}]}, {"text": "done"}]
        script.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
        model = f"scripted:{script.name}"
    args = [str(Path(__file__).resolve()), "--serve", str(catalog), "--page-size", str(page_size)]
    text = f'[agent]\nid = "scale-mcp"\nmodel = "{model}"\nmax_steps = 20\n\n'
    text += f'[[tools.mcp]]\nname = "big"\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n'
    text += "connect_timeout = 600\n"
    path = folder / f"{label}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def server_alone(catalog: Path, page_size: int, repeat: int) -> dict[str, Any]:
    """The server's own share of a cold run: started, initialised and listed to the last
    page by a bare JSON-RPC client over its stdio (no SDK, no greenroom); medians."""
    import subprocess

    cmd = [sys.executable, str(Path(__file__).resolve()), "--serve", str(catalog), "--page-size", str(page_size)]
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdin is not None and proc.stdout is not None

        def ask(message: dict[str, Any], stdin: Any = proc.stdin, stdout: Any = proc.stdout) -> Any:
            stdin.write((json.dumps(message) + "\n").encode())
            stdin.flush()
            return json.loads(stdout.readline()) if "id" in message else None

        try:
            ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
            ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
            cursor, listed = None, 0
            for n in range(1, 1_000_000):
                page = ask(
                    {"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": {"cursor": cursor} if cursor else {}}
                )
                listed += len(page["result"]["tools"])
                cursor = page["result"].get("nextCursor")
                if not cursor:
                    break
            times.append(time.perf_counter() - started)
        finally:
            proc.kill()
            proc.wait()
    return {"ms": statistics.median(times) * 1000, "tools": listed}


def sdk_list(catalog: Path, page_size: int) -> None:
    """``--sdk-list``: the server started, initialised and listed to its last page by the
    SDK's own client (``ClientSession.list_tools``, no greenroom); prints the seconds."""
    import anyio
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    args = [str(Path(__file__).resolve()), "--serve", str(catalog), "--page-size", str(page_size)]
    server = StdioServerParameters(command=sys.executable, args=args)

    async def main() -> tuple[float, int]:
        started = time.perf_counter()
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            cursor, listed = None, 0
            for _ in range(1_000_000):
                page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                listed += len(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            return time.perf_counter() - started, listed

    seconds, listed = anyio.run(main)
    print(json.dumps({"seconds": seconds, "tools": listed}))


def sdk_alone(catalog: Path, page_size: int, repeat: int) -> dict[str, Any]:
    """The server and the SDK's client: ``sdk_list`` in a new process (timed from before
    the server starts, so without the client's imports); medians."""
    import subprocess

    cmd = [sys.executable, str(Path(__file__).resolve()), "--sdk-list", str(catalog), "--page-size", str(page_size)]
    got = [json.loads(subprocess.run(cmd, capture_output=True, check=True, timeout=900).stdout) for _ in range(repeat)]
    return {"ms": statistics.median(g["seconds"] for g in got) * 1000, "tools": got[0]["tools"]}


def _env(home: str, tree: str | None) -> dict[str, str]:
    env = {**os.environ, "GREENROOM_HOME": home, "COLUMNS": "80", "NO_COLOR": "1"}
    if tree:
        env["PYTHONPATH"] = f"{tree}/core:{tree}/plugins"
    return env


def _child(cmd: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> Any:
    from scale_process import ChildFailed, run_child

    child = run_child(cmd, env, timeout=900)
    if child.returncode not in ok:
        tail = "\n".join((child.stderr or child.stdout).strip().splitlines()[-6:])
        raise ChildFailed(f"exit {child.returncode}: {tail}")
    return child


def runs(config: Path, repeat: int, tree: str | None) -> dict[str, Any]:
    """``greenroom run CONFIG hi``, cold then warm, ``repeat`` times: medians and peaks."""
    from scale_process import greenroom

    cmd = greenroom("run", str(config), "hi")
    cold, warm = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="greenroom-scale-mcp-home-") as home:
            cold.append(_child(cmd, _env(home, tree)))
            warm.append(_child(cmd, _env(home, tree)))
    return {
        "cold_ms": statistics.median(c.seconds for c in cold) * 1000,
        "warm_ms": statistics.median(c.seconds for c in warm) * 1000,
        "cold_peak_mb": max(c.peak_mb for c in cold),
        "warm_peak_mb": max(c.peak_mb for c in warm),
    }


def checks(catalog_config: Path, mcp_config: Path, repeat: int, tree: str | None) -> dict[str, Any]:
    """``greenroom config check`` in each form: medians of wall time, the exit code, and
    how many findings of each level it printed."""
    from scale_process import greenroom

    forms: dict[str, list[Any]] = {"catalog_cold": [], "catalog_warm": [], "mcp_cached": [], "mcp_connect": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="greenroom-scale-mcp-home-") as home:
            env = _env(home, tree)
            forms["catalog_cold"].append(_child(greenroom("config", "check", str(catalog_config)), env, (0, 1, 2)))
            forms["catalog_warm"].append(_child(greenroom("config", "check", str(catalog_config)), env, (0, 1, 2)))
            connect = greenroom("config", "check", "--connect", str(mcp_config))
            forms["mcp_connect"].append(_child(connect, env, (0, 1, 2)))  # lists the server, fills the cache
            forms["mcp_cached"].append(_child(greenroom("config", "check", str(mcp_config)), env, (0, 1, 2)))
    out: dict[str, Any] = {}
    for form, children in forms.items():
        last = children[-1]
        levels = [line.split(":", 1)[0] for line in last.stderr.splitlines()]
        out[form] = {
            "ms": statistics.median(c.seconds for c in children) * 1000,
            "peak_mb": max(c.peak_mb for c in children),
            "exit": last.returncode,
            "errors": levels.count("error"),
            "warnings": levels.count("warning"),
        }
    return out


def attempt(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return run()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"}


def measure(sizes: list[int], repeat: int, page_size: int, trees: dict[str, str | None]) -> dict[str, Any]:
    from scale_catalog import build, write_config

    results: dict[str, Any] = {
        "sizes": sizes,
        "page_size": page_size,
        "repeat": repeat,
        "variants": list(trees),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_average": os.getloadavg()[0],
        "by_size": {},
    }
    with tempfile.TemporaryDirectory(prefix="greenroom-scale-mcp-") as tmp:
        for size in sizes:
            say(f"{size:,} tools: building the catalog")
            catalog = build(size, Path(tmp) / str(size))
            answer = write_mcp_config(catalog.folder, catalog.path, "mcp-run", page_size)
            searching = write_mcp_config(catalog.folder, catalog.path, "mcp-search", page_size, search=SEARCH_QUERY)
            catalog_config = write_config(catalog, "catalog-check")
            part: dict[str, Any] = {}
            say(f"{size:,} tools: the server alone")
            results.setdefault("server_alone", {})[str(size)] = attempt(
                functools.partial(server_alone, catalog.path, page_size, repeat)
            )
            say(f"{size:,} tools: the server and the SDK's client alone")
            results.setdefault("sdk_alone", {})[str(size)] = attempt(
                functools.partial(sdk_alone, catalog.path, page_size, repeat)
            )
            for variant, tree in trees.items():  # in turns: load on the machine hits both alike
                say(f"{size:,} tools, {variant}: run, answering at once")
                part.setdefault(variant, {})["run"] = attempt(functools.partial(runs, answer, repeat, tree))
            for variant, tree in trees.items():
                say(f"{size:,} tools, {variant}: run, searching first")
                part[variant]["search"] = attempt(functools.partial(runs, searching, repeat, tree))
            for variant, tree in trees.items():
                say(f"{size:,} tools, {variant}: config check")
                part[variant]["check"] = attempt(
                    functools.partial(checks, catalog_config, answer, max(1, repeat - 1), tree)
                )
            results["by_size"][str(size)] = part
    return results


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- the report -----------------------------------------------------------------------------
def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.1f}x" if value is not None and base else "-"


def tables(results: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each table."""
    sizes = [str(s) for s in results["sizes"]]
    variants = results["variants"]
    by = results["by_size"]
    smallest = sizes[0]

    def get(size: str, variant: str, part: str, key: str) -> float | None:
        value = by[size][variant].get(part, {}).get(key)
        return value if isinstance(value, int | float) else None

    out = []
    for part, what in (("run", "answers at once"), ("search", "searches first")):
        header = ["tools", "variant", "cold ms", "warm ms", "cold MB", "warm MB"]
        header += ["cold x 1k", "warm x 1k", "cold MB x 1k", "warm MB x 1k"]
        rows = []
        for size in sizes:
            for v in variants:
                error = by[size][v].get(part, {}).get("error")
                if error:
                    rows.append([f"{int(size):,}", v, f"failed: {error[:60]}", *[""] * 7])
                    continue
                row = [f"{int(size):,}", v]
                keys = ("cold_ms", "warm_ms", "cold_peak_mb", "warm_peak_mb")
                values = [get(size, v, part, key) for key in keys]
                row += [f"{x:,.0f}" if x else "-" for x in values]
                row += [_ratio(x, get(smallest, v, part, key)) for x, key in zip(values, keys, strict=True)]
                rows.append(row)
        out.append((f"`greenroom run` with one MCP server, model {what}", header, rows))
    header = ["tools", "variant", "form", "ms", "x 1k", "peak MB", "exit", "errors", "warnings"]
    rows = []
    for size in sizes:
        for v in variants:
            part = by[size][v].get("check", {})
            if "error" in part:
                rows.append([f"{int(size):,}", v, "failed", part["error"][:60], "", "", "", "", ""])
                continue
            for form, got in part.items():
                base = by[smallest][v].get("check", {}).get(form, {}).get("ms")
                row = [f"{int(size):,}", v, form.replace("_", ", "), f"{got['ms']:,.0f}", _ratio(got["ms"], base)]
                row += [f"{got['peak_mb']:,.0f}", str(got["exit"]), str(got["errors"]), str(got["warnings"])]
                rows.append(row)
    out.append(("`greenroom config check`", header, rows))
    for key, title in (
        ("server_alone", "The server alone: started and listed by a bare JSON-RPC client"),
        ("sdk_alone", "The server and the SDK's client alone: listed by ClientSession.list_tools, no greenroom"),
    ):
        alone = results.get(key, {})
        if not alone:
            continue
        rows = []
        for size in sizes:
            got = alone.get(size, {})
            ms = got.get("ms")
            rows.append(
                [
                    f"{int(size):,}",
                    f"{ms:,.0f}" if ms else got.get("error", "-")[:60],
                    _ratio(ms, alone.get(smallest, {}).get("ms")),
                ]
            )
        out.append((title, ["tools", "ms", "x 1k"], rows))
    return out


def print_tables(results: dict[str, Any]) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=200)
    for title, header, rows in tables(results):
        table = Table(*header, title=title)
        if not console.is_terminal:
            table.box = box.MARKDOWN
            console.print(f"**{title}**\n")
            table.title = None
        for row in rows:
            table.add_row(*row)
        console.print(table)
        console.print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", type=Path, metavar="CATALOG", help=argparse.SUPPRESS)
    ap.add_argument("--sdk-list", type=Path, metavar="CATALOG", help=argparse.SUPPRESS)
    ap.add_argument("--page-size", type=int, default=1000, help="tools per tools/list page (default 1000)")
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated catalog sizes")
    ap.add_argument("--quick", action="store_true", help="one repetition: a smoke run, not figures to quote")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement (medians)")
    ap.add_argument("--json", nargs="?", const="-", metavar="PATH", help="write the results as JSON (-: stdout)")
    ap.add_argument("--load", type=Path, metavar="JSON", help="report the results of an earlier --json run")
    ap.add_argument("--compare", metavar="TREE", help="also run every child with TREE/core:TREE/plugins (before)")
    ap.add_argument("--now", metavar="TREE", help="run the 'now' children with TREE/core:TREE/plugins too")
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve, args.page_size)
        return 0
    if args.sdk_list:
        sdk_list(args.sdk_list, args.page_size)
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale_catalog import DATASETS, available

    if args.load:
        results = json.loads(args.load.read_text(encoding="utf-8"))
    elif not available():
        say(f"skipped: no datasets under {DATASETS} (set GREENROOM_DATASETS)")
        return 0
    else:
        sizes = [int(x.replace("_", "")) for x in args.sizes.split(",") if x.strip()]
        trees: dict[str, str | None] = {"before": args.compare} if args.compare else {}
        trees["now"] = args.now
        results = measure(sizes, 1 if args.quick else args.repeat, args.page_size, trees)
    if args.json and not args.load:
        text = json.dumps(results, indent=2)
        if args.json == "-":
            print(text)
            return 0
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    print_tables(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
