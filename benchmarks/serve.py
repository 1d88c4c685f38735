"""``greenroom serve`` against a plain aggregator, over the same upstream servers, in one run.

Upstream: the reference servers ``mcp-server-time`` and ``mcp-server-git`` (a throwaway
repository), and a stdio server written at run time into a temporary folder that lists
the 117 tools of ``../shared/datasets/github_mcp`` (read at run time; each call answers
``ok``), so the catalog is the size of a real GitHub server.

- **context**: the tokens (o200k) a client puts before its model on connecting: the
  gateway's ``tools/list`` plus its ``instructions``, against a plain aggregator that
  lists every upstream tool (``server__tool``) plus every server's instructions.
- **latency**: a call to ``time__get_current_time`` through the gateway (the
  dispatcher, greenroom's call path, the upstream server), against the same call on a
  client session to ``mcp-server-time`` directly; medians over ``--calls`` calls, after
  a warm-up call each.

Both are printed as ratios (gateway / direct) of figures measured in this run:

    python benchmarks/serve.py [--calls 50] [--strategy dispatch] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from greenroom.tokens.counting import count_tokens

ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT.parent / "shared" / "datasets" / "github_mcp" / "tools.jsonl"

CATALOG_SERVER = """
import json, sys
import anyio
import mcp_types as t
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
LISTED = [t.Tool(name=d["name"], description=d["description"], input_schema=d.get("parameters") or {"type": "object"})
          for d in TOOLS]

async def list_tools(ctx, params):
    return t.ListToolsResult(tools=LISTED)

async def call_tool(ctx, params):
    return t.CallToolResult(content=[t.TextContent(type="text", text="ok")])

server = Server("catalog", on_list_tools=list_tools, on_call_tool=call_tool)

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""


def upstream(folder: Path) -> dict[str, list[str]]:
    """Each upstream server's command line, by name."""
    repo = folder / "repo"
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "README.md").write_text("bench\n")
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "first"], check=True)
    servers = {
        "git": [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)],
        "time": [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"],
    }
    if GITHUB.exists():
        script = folder / "catalog_server.py"
        script.write_text(CATALOG_SERVER, encoding="utf-8")
        servers["github"] = [sys.executable, str(script), str(GITHUB)]
    return servers


def config(folder: Path, servers: dict[str, list[str]], strategy: str) -> Path:
    lines = ['[agent]\nid = "bench-serve"\nmodel = "anthropic:claude-sonnet-4-5"\n']
    for name, argv in servers.items():
        lines.append(f"[[tools.mcp]]\nname = {name!r}\ncommand = {argv[0]!r}\nargs = {json.dumps(argv[1:])}\n")
    lines.append(f'[plugins.deferred-tools]\nstrategy = "{strategy}"\n')
    path = folder / "agent.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def tools_tokens(tools: list[Any]) -> int:
    return count_tokens(json.dumps([t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]))


async def timed_calls(session: ClientSession, name: str, args: dict[str, Any], n: int) -> list[float]:
    await session.call_tool(name, args)  # warm-up: the upstream server starts, caches fill
    times = []
    for _ in range(n):
        start = time.perf_counter()
        result = await session.call_tool(name, args)
        times.append(time.perf_counter() - start)
        if result.is_error:
            raise RuntimeError(f"{name} failed: {result.content}")
    return times


async def through_gateway(cfg: Path, calls: int) -> dict[str, Any]:
    argv = [sys.executable, "-m", "greenroom.cli", "serve", str(cfg)]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = (await session.list_tools()).tools
        tokens = tools_tokens(tools) + count_tokens(init.instructions or "")
        args = {"tool_name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
        times = await timed_calls(session, "deferred_tool_call", args, calls)
    return {"tools": len(tools), "tokens": tokens, "call_s": statistics.median(times)}


async def plain(servers: dict[str, list[str]], calls: int) -> dict[str, Any]:
    """A plain aggregator's listing (every tool, every server's instructions), and the direct call."""
    count, tokens, call_s = 0, 0, 0.0
    for name, argv in servers.items():
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            tools = [t.model_copy(update={"name": f"{name}__{t.name}"}) for t in (await session.list_tools()).tools]
            count += len(tools)
            tokens += tools_tokens(tools) + count_tokens(init.instructions or "")
            if name == "time":
                call_s = statistics.median(await timed_calls(session, "get_current_time", {"timezone": "UTC"}, calls))
    return {"tools": count, "tokens": tokens, "call_s": call_s}


async def measure(calls: int, strategy: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="greenroom-bench-serve-") as tmp:
        folder = Path(tmp)
        os.environ["GREENROOM_HOME"] = str(folder / "home")  # nothing learned or cached leaks in or out
        servers = upstream(folder)
        cfg = config(folder, servers, strategy)
        direct = await plain(servers, calls)
        gateway = await through_gateway(cfg, calls)
    return {
        "strategy": strategy,
        "calls": calls,
        "direct": direct,
        "gateway": gateway,
        "context_ratio": gateway["tokens"] / direct["tokens"],
        "latency_ratio": gateway["call_s"] / direct["call_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--strategy", default="dispatch", choices=["dispatch", "inject"])
    parser.add_argument("--json", type=Path)
    opts = parser.parse_args()
    report = anyio.run(measure, opts.calls, opts.strategy)
    d, g = report["direct"], report["gateway"]
    print(f"upstream: {d['tools']} tools ({', '.join(['git', 'time'] + (['github'] if GITHUB.exists() else []))})")
    print(
        f"context on connect: gateway {g['tokens']:,} tokens ({g['tools']} tools + instructions), "
        f"plain aggregator {d['tokens']:,} tokens ({d['tools']} tools) -> ratio {report['context_ratio']:.3f}"
    )
    print(
        f"call latency (median of {report['calls']}): gateway {g['call_s'] * 1000:.2f} ms, "
        f"direct {d['call_s'] * 1000:.2f} ms -> ratio {report['latency_ratio']:.2f}"
    )
    if opts.json:
        opts.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
