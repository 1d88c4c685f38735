"""``greenroom serve`` as a fleet under load: replicas behind HAProxy, many MCP clients.

Three targets, measured in one run, each behind the same HAProxy on loopback:

- **sdk**: the MCP SDK's own server (``MCPServer``) with one trivial tool, one process:
  the floor any gateway built on the SDK stands on;
- **gateway x1** and **gateway xN**: ``greenroom serve`` replicas (deploy/local/fleet.py)
  over the reference ``mcp-server-time``, deferred tools (dispatch), priors in one
  shared PostgreSQL store (started with .ci/postgres.sh unless
  ``GREENROOM_TEST_POSTGRES_URL`` names one).

Clients speak MCP 2026-07-28 through the SDK's ``Client``, spread over worker processes.
A gateway operation is, in turn, a dispatched call of ``time__get_current_time`` (7 in
10), a ``ToolSearch`` (2 in 10) or a ``load_tools`` of the time server's group (1 in 10);
an SDK operation is a call of its trivial tool. Printed per target: operations per
second, p50/p95/p99 latency, errors, and server CPU per operation (every process of the
target, upstream servers included, from /proc), with ratios against one replica and
against the SDK server; ``--plot`` draws the latency distributions. ``--baseline DIR``
(a folder holding another checkout's ``core/`` and ``plugins/``, e.g. ``git archive
HEAD core plugins | tar -x -C DIR``) measures the gateway targets with that code too,
each right after this code's, and prints this code's ratios to it.

    python benchmarks/serve_fleet.py [--ops 10000] [--clients 50] [--replicas 2]
        [--workers 2] [--baseline DIR] [--json out.json] [--plot fleet.png]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.fleet_testutil import DISPATCH, NOW, fleet_config, load_fleet  # noqa: E402

SDK_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("trivial", log_level="WARNING")

@server.tool(description="Say the time (always the same).")
def now() -> str:
    return "2026-11-27T00:00:00Z"

print("starting on", sys.argv[1], file=sys.stderr, flush=True)
server.run("streamable-http", port=int(sys.argv[1]), stateless_http=True)
"""


# ---------------------------------------------------------------- load (worker processes)


def _operation(i: int, sdk: bool) -> tuple[str, dict[str, Any]]:
    if sdk:
        return "now", {}
    kind = i % 10
    if kind < 7:
        return DISPATCH, NOW
    if kind < 9:
        return "ToolSearch", {"query": "current time in a timezone"}
    return "load_tools", {"group_id": "mcp:time"}


async def _clients(url: str, clients: int, ops: int, sdk: bool, worker: int) -> dict[str, Any]:
    import mcp_types
    from mcp.client.client import Client

    latencies: list[float] = []
    errors: list[str] = []
    per_client, extra = divmod(ops, clients)

    async def one(index: int) -> None:
        calls = per_client + (1 if index < extra else 0)
        # each client says who it is, as real ones do: the gateway's per-client limits count per client
        me = mcp_types.Implementation(name=f"bench-{worker}-{index}", version="1")
        async with Client(url, mode="2026-07-28", client_info=me) as client:
            for n in range(calls):
                name, args = _operation(index + n, sdk)
                started = time.perf_counter()
                try:
                    with anyio.fail_after(60):
                        result = await client.call_tool(name, args)
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}"[:160])
                    continue
                latencies.append(time.perf_counter() - started)
                if result.is_error:
                    errors.append(f"{name}: {result.content}"[:160])

    async with anyio.create_task_group() as tg:
        for index in range(clients):
            tg.start_soon(one, index)
    return {"latencies": latencies, "errors": errors}


def _worker(url: str, clients: int, ops: int, sdk: bool, worker: int, out: Any) -> None:
    out.send(anyio.run(_clients, url, clients, ops, sdk, worker))


def drive(url: str, clients: int, ops: int, workers: int, sdk: bool) -> tuple[float, list[float], list[str]]:
    """``ops`` operations by ``clients`` clients over ``workers`` processes: wall seconds,
    latencies, errors."""
    ctx = multiprocessing.get_context("spawn")
    procs, pipes = [], []
    started = time.perf_counter()
    for w in range(workers):
        share = clients // workers + (1 if w < clients % workers else 0)
        mine = ops // workers + (1 if w < ops % workers else 0)
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_worker, args=(url, share, mine, sdk, w, send))
        proc.start()
        procs.append(proc)
        pipes.append(receive)
    results = [p.recv() for p in pipes]
    wall = time.perf_counter() - started
    for proc in procs:
        proc.join()
    return wall, [x for r in results for x in r["latencies"]], [e for r in results for e in r["errors"]]


# ---------------------------------------------------------------- server CPU from /proc


def _stat(pid: int) -> tuple[int, float] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks  # ppid, utime + stime


def tree_cpu(roots: Sequence[int]) -> float:
    """CPU seconds used so far by ``roots`` and every process under them."""
    stats = {int(p.name): s for p in Path("/proc").iterdir() if p.name.isdigit() and (s := _stat(int(p.name)))}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, list(roots)
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo.extend(children.get(pid, ()))
    return total


# ---------------------------------------------------------------- targets


def postgres() -> tuple[str, str | None]:
    url = os.environ.get("GREENROOM_TEST_POSTGRES_URL")
    if url:
        return url, None
    out = subprocess.run(["bash", str(ROOT / ".ci" / "postgres.sh")], capture_output=True, text=True, check=True)
    env = dict(line.removeprefix("export ").split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    unquote = {k: v.strip("'\"") for k, v in env.items()}
    return unquote["GREENROOM_TEST_POSTGRES_URL"], unquote.get("GREENROOM_TEST_POSTGRES_STOP")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(name: str, url: str, roots: Sequence[int], args: argparse.Namespace, sdk: bool) -> dict[str, Any]:
    drive(url, min(args.clients, 8), 40, 1, sdk)  # warm-up: caches, first listings, connections
    cpu_before = tree_cpu(roots)
    wall, latencies, errors = drive(url, args.clients, args.ops, args.workers, sdk)
    cpu = tree_cpu(roots) - cpu_before
    ops = len(latencies) + len(errors)
    row = {
        "target": name,
        "ops": ops,
        "errors": len(errors),
        "ops_per_s": ops / wall,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p95_ms": percentile(latencies, 0.95) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "cpu_ms_per_op": cpu / max(ops, 1) * 1000,
        "first_errors": errors[:3],
        "latencies": latencies,
    }
    print(
        f"  {name}: {row['ops_per_s']:.0f} ops/s, p95 {row['p95_ms']:.1f} ms, {len(errors)} errors",
        file=sys.stderr,
    )
    return row


def sdk_target(folder: Path, args: argparse.Namespace, fleet_module: Any) -> dict[str, Any]:
    script = folder / "sdk_server.py"
    script.write_text(SDK_SERVER, encoding="utf-8")
    port = fleet_module.free_port()
    log = (folder / "sdk_server.log").open("wb")  # a file: a pipe nobody reads would fill and stop it
    proc = subprocess.Popen([sys.executable, str(script), str(port)], stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while fleet_module.get(port, "/mcp") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        return measure("sdk", f"http://127.0.0.1:{port}/mcp", [proc.pid], args, sdk=True)
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def gateway_target(
    config: Path, replicas: int, args: argparse.Namespace, fleet_module: Any, code: Path | None = None
) -> dict[str, Any]:
    """``replicas`` gateways of this checkout, or of the one in ``code`` (its ``core/`` and
    ``plugins/`` first on the replicas' path)."""
    env = {} if code is None else {"PYTHONPATH": os.pathsep.join([str(code / "core"), str(code / "plugins")])}
    name = f"gateway x{replicas}" + ("" if code is None else " (baseline)")
    with fleet_module.Fleet(config, replicas, env=env) as fleet:
        roots = [r.proc.pid for r in fleet.replicas]
        return measure(name, fleet.url, roots, args, sdk=False)


def report(rows: list[dict[str, Any]], cores: int) -> None:
    one = next(r for r in rows if r["target"] == "gateway x1")
    sdk = next(r for r in rows if r["target"] == "sdk")
    head = ("ops/s", "vs x1", "p50", "p95", "p99", "p95/sdk", "err", "cpu/op")
    widths = (7, 6, 8, 8, 8, 7, 4, 7)
    print(f"{'target':<22} " + " ".join(f"{h:>{w}}" for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print(
            f"{r['target']:<22} {r['ops_per_s']:>7.0f} {r['ops_per_s'] / one['ops_per_s']:>5.2f}x "
            f"{r['p50_ms']:>6.1f}ms {r['p95_ms']:>6.1f}ms {r['p99_ms']:>6.1f}ms "
            f"{r['p95_ms'] / sdk['p95_ms']:>6.2f}x {r['errors']:>4} {r['cpu_ms_per_op']:>5.1f}ms"
        )
    print(f"{cores} cores; clients, replicas, upstream servers and PostgreSQL share them")
    for r in rows:
        before = next((b for b in rows if b["target"] == f"{r['target']} (baseline)"), None)
        if before is not None:
            ratios = {k: r[k] / before[k] for k in ("ops_per_s", "p50_ms", "p95_ms", "p99_ms", "cpu_ms_per_op")}
            print(f"{r['target']} ÷ baseline: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in rows:
        ordered = sorted(x * 1000 for x in r["latencies"])
        if ordered:
            ax.plot(ordered, [i / len(ordered) for i in range(len(ordered))], label=r["target"])
    ax.set_xscale("log")
    ax.set_xlabel("latency per operation (ms, log)")
    ax.set_ylabel("share of operations")
    ax.set_title("greenroom serve behind HAProxy vs the MCP SDK's own server")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description="greenroom serve as a fleet under load")
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="client processes")
    parser.add_argument("--baseline", type=Path, help="another checkout's folder (with core/ and plugins/)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    fleet_module = load_fleet()
    url, stop = postgres()
    try:
        with tempfile.TemporaryDirectory(prefix="greenroom-fleet-bench-") as tmp:
            folder = Path(tmp)
            os.environ["GREENROOM_PRIORS_URL"] = url
            os.environ["GREENROOM_HOME"] = str(folder / "home")
            config = fleet_config(folder, f"fleet-bench-{os.getpid()}")
            rows = [sdk_target(folder, args, fleet_module)]
            for replicas in sorted({1, args.replicas}):
                rows.append(gateway_target(config, replicas, args, fleet_module))
                if args.baseline is not None:
                    rows.append(gateway_target(config, replicas, args, fleet_module, args.baseline.resolve()))
    finally:
        if stop:
            subprocess.run(["bash", "-c", stop], check=False)
    cores = os.cpu_count() or 1
    report(rows, cores)
    if args.json:
        slim = [{k: v for k, v in r.items() if k != "latencies"} for r in rows]
        args.json.write_text(json.dumps({"cores": cores, "rows": slim}, indent=2), encoding="utf-8")
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
