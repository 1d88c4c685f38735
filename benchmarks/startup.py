"""Start-up cost of the command line: ``greenroom --help`` against ``import pluggy``.

Each setup runs ``python -m greenroom.cli --help`` and the baseline ``python -c "import
pluggy"`` in turns, N times each; the table shows the medians and their ratios, measured in
the same run. ``--help`` is timed twice: warm, as every run after the first sees it (the
plugins' commands listed from greenroom's cache), and cold, with an empty greenroom home
each time (every plugin imported, as the first ``--help`` after an install or an edit).

Setups: this interpreter on its own install, any other interpreter (``--python``, an older
checkout's venv), and any source tree run with this interpreter (``--tree``, a checkout put
first on ``PYTHONPATH`` as ``TREE/core:TREE/plugins``; its entry points are still this
install's):

    python benchmarks/startup.py [--repeat 15] [--python /other/venv/bin/python] [--tree /old/checkout]

The child processes run with ``GREENROOM_HOME`` in a temporary folder so nothing a user
keeps is read or written, and write ``.pyc`` files as a normal install does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table


def timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


class Setup:
    """One install to measure: its interpreter, environment and timings so far."""

    def __init__(self, label: str, python: str, env: dict[str, str], scratch: Path) -> None:
        self.label, self.env, self.scratch = label, env, scratch
        self.base_cmd = [python, "-c", "import pluggy"]
        self.help_cmd = [python, "-m", "greenroom.cli", "--help"]
        self.times: dict[str, list[float]] = {"base": [], "warm": [], "cold": []}
        for cmd in (self.base_cmd, self.help_cmd):  # warm the file cache, .pyc files and greenroom's cache
            timed(cmd, env)

    def round(self) -> None:
        cold_env = {**self.env, "GREENROOM_HOME": tempfile.mkdtemp(dir=self.scratch)}
        self.times["base"].append(timed(self.base_cmd, self.env))
        self.times["warm"].append(timed(self.help_cmd, self.env))
        self.times["cold"].append(timed(self.help_cmd, cold_env))

    def result(self) -> dict[str, float]:
        b, w, c = (statistics.median(self.times[k]) for k in ("base", "warm", "cold"))
        return {"baseline_ms": b * 1000, "warm_ms": w * 1000, "cold_ms": c * 1000, "warm": w / b, "cold": c / b}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--python", action="append", default=[], help="Another interpreter to measure.")
    parser.add_argument("--tree", action="append", default=[], help="A source tree to measure with this interpreter.")
    args = parser.parse_args()
    specs: list[tuple[str, str, dict[str, str]]] = [("this install", sys.executable, {})]
    specs += [(p, p, {}) for p in args.python]
    for tree in args.tree:
        root = Path(tree).resolve()
        path = os.pathsep.join([str(root / "core"), str(root / "plugins")])
        specs.append((f"tree {root}", sys.executable, {"PYTHONPATH": path}))
    with tempfile.TemporaryDirectory() as scratch:
        setups = []
        for label, python, extra in specs:
            env = {**os.environ, "GREENROOM_HOME": tempfile.mkdtemp(dir=scratch), "COLUMNS": "80", **extra}
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what users see: with .pyc files
            setups.append(Setup(label, python, env, Path(scratch)))
        for _ in range(args.repeat):  # every setup in turns, so load on the machine hits all alike
            for setup in setups:
                setup.round()
        rows = [(s.label, s.result()) for s in setups]
    table = Table(title=f"greenroom --help start-up (median of {args.repeat})")
    columns = ("setup", "import pluggy ms", "--help ms", "x pluggy", "cold ms", "cold x pluggy")
    for col in columns:
        table.add_column(col, justify="left" if col == "setup" else "right", overflow="fold")
    for label, r in rows:
        ms = [f"{r[k]:.0f}" for k in ("baseline_ms", "warm_ms", "cold_ms")]
        table.add_row(label, ms[0], ms[1], f"{r['warm']:.1f}", ms[2], f"{r['cold']:.1f}")
    Console(width=max(100, Console().width)).print(table)
    first = rows[0][1]["warm"]
    for label, r in rows[1:]:
        print(f"--help x pluggy, this install against {label}: {first / r['warm']:.2f} of it")


if __name__ == "__main__":
    main()
