"""Start-up cost of the command line: ``greenroom --help`` against ``import pluggy``.

Each interpreter given (default: this one) runs ``python -m greenroom.cli --help`` and the
baseline ``python -c "import pluggy"`` in turns, N times each; the table shows the medians
and their ratio, measured in the same run. Give the interpreters of two installs (an older
checkout's venv, say) to compare them side by side:

    python benchmarks/startup.py [--repeat 15] [--python /path/to/other/venv/bin/python ...]

The child processes run with ``GREENROOM_HOME`` in a temporary folder so nothing a user
keeps is read or written.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from rich.console import Console
from rich.table import Table


def timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def measure(python: str, repeat: int, env: dict[str, str]) -> dict[str, float]:
    base_cmd = [python, "-c", "import pluggy"]
    help_cmd = [python, "-m", "greenroom.cli", "--help"]
    for cmd in (base_cmd, help_cmd):  # warm the file cache and .pyc files
        timed(cmd, env)
    base: list[float] = []
    helps: list[float] = []
    for _ in range(repeat):  # interleaved, so load on the machine hits both alike
        base.append(timed(base_cmd, env))
        helps.append(timed(help_cmd, env))
    b, h = statistics.median(base), statistics.median(helps)
    return {"baseline_ms": b * 1000, "help_ms": h * 1000, "ratio": h / b}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--python", action="append", default=[], help="Another interpreter to measure.")
    args = parser.parse_args()
    pythons = [sys.executable, *args.python]
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GREENROOM_HOME": home, "COLUMNS": "80"}
        rows = [(p, measure(p, args.repeat, env)) for p in pythons]
    table = Table(title=f"greenroom --help start-up (median of {args.repeat})")
    for col in ("interpreter", "import pluggy ms", "--help ms", "x pluggy"):
        table.add_column(col, justify="left" if col == "interpreter" else "right", overflow="fold")
    for python, r in rows:
        table.add_row(python, f"{r['baseline_ms']:.0f}", f"{r['help_ms']:.0f}", f"{r['ratio']:.1f}")
    Console().print(table)
    if len(rows) > 1:
        first = rows[0][1]["help_ms"]
        for python, r in rows[1:]:
            print(f"{python}: --help takes {r['help_ms'] / first:.2f}x of {rows[0][0]}")


if __name__ == "__main__":
    main()
