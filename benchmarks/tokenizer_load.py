"""Tokenizer load in a new process: greenroom's encoder (bpe_openai's Rust core alone) against
bpe_openai's full ``get_encoding`` (what greenroom loaded before) and ``import pluggy``.

Each variant runs in a fresh interpreter, N times, interleaved so load on the machine hits
them alike. A child reports how long loading and counting one short text took inside it, and
its peak memory; the table shows medians, with each as a ratio to the full API's load and
to the whole ``python -c "import pluggy"`` process, measured in the same run.

    python benchmarks/tokenizer_load.py [--repeat 15]
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

from rich.console import Console
from rich.table import Table

_PROBE = """
import json, resource, sys, time
started = time.perf_counter()
{load}
n = count("hello world, how are you?")
took = time.perf_counter() - started
print(json.dumps({{"load_s": took, "n": n, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "modules": sorted(m for m in sys.modules if m.startswith("bpe_openai"))}}))
"""

VARIANTS: dict[str, str] = {
    "greenroom encoder": "from greenroom.tokens.encoder import Encoder\ncount = Encoder('o200k_base').count",
    "greenroom count_tokens": "from greenroom.tokens.counting import count_tokens as count",
    "bpe_openai get_encoding (before)": (
        "import bpe_openai\nenc = bpe_openai.get_encoding('o200k_base')\n"
        "count = lambda text: len(enc.encode_ordinary(text))"
    ),
}
BASELINE = "bpe_openai get_encoding (before)"


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - started, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    pluggy_cmd = [sys.executable, "-c", "import pluggy"]
    cmds = {name: [sys.executable, "-c", _PROBE.format(load=load)] for name, load in VARIANTS.items()}
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GREENROOM_HOME": home}
        for cmd in [pluggy_cmd, *cmds.values()]:  # warm the file cache and .pyc files
            run(cmd, env)
        pluggy: list[float] = []
        wall: dict[str, list[float]] = {name: [] for name in cmds}
        inner: dict[str, list[dict[str, float]]] = {name: [] for name in cmds}
        for _ in range(args.repeat):
            pluggy.append(run(pluggy_cmd, env)[0])
            for name, cmd in cmds.items():
                took, out = run(cmd, env)
                wall[name].append(took)
                inner[name].append(json.loads(out))
    base_load = statistics.median(r["load_s"] for r in inner[BASELINE])
    plug = statistics.median(pluggy)
    table = Table(
        title=f"tokenizer load in a new process (median of {args.repeat}); import pluggy {plug * 1000:.0f} ms"
    )
    for col in ("variant", "load ms", "x full API load", "x import pluggy", "process ms", "x import pluggy", "peak MB"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for name in cmds:
        load = statistics.median(r["load_s"] for r in inner[name])
        proc = statistics.median(wall[name])
        rss = statistics.median(r["rss_mb"] for r in inner[name])
        table.add_row(
            name,
            f"{load * 1000:.0f}",
            f"{load / base_load:.2f}",
            f"{load / plug:.2f}",
            f"{proc * 1000:.0f}",
            f"{proc / plug:.2f}",
            f"{rss:.0f}",
        )
    Console(width=120).print(table)
    counts = {name: {r["n"] for r in inner[name]} for name in cmds}
    print("same count from every variant:", len(set().union(*counts.values())) == 1)
    print("bpe_openai modules loaded by greenroom:", inner["greenroom count_tokens"][0]["modules"])


if __name__ == "__main__":
    main()
