"""Did you mean, at 1k / 10k / 100k tool names: the cost of a miss against a plain dict lookup
and against ``difflib.get_close_matches`` (what greenroom used before), and how often the
meant name is among the three suggestions.

The catalogs are the real tool names of ``../shared/datasets`` (seal_tools, metatool,
github_mcp) repeated under numbered ``server__`` prefixes until each size is reached, as a
merged catalog of many servers would be. The typed names are real names with a mistake made
in them (seeded): one or two letters changed, dropped or swapped, the prefix dropped or
misspelt, the words in another order, the case changed. With ``--copies`` the catalogs are
built as ``benchmarks/scale.py`` builds them instead (each real name again under renamed
copies, ``name__r1`` ...) and the typos are its own (two neighbouring letters swapped, or one
dropped): families of names alike but for their end, which crowd the names a lookup reads.
Every figure is a median over the typed names, measured in the same run; ratios are against
the dict lookup.

    python benchmarks/suggest.py [--sizes 1000 10000 100000] [--typos 30] [--copies]
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import re
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from greenroom.run import suggest
from greenroom.run.suggest import NameIndex, close_names

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"


def real_names() -> list[tuple[str, str]]:
    out = []
    for name in ("github_mcp", "metatool", "seal_tools"):
        path = DATASETS / name / "tools.jsonl"
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                tool = json.loads(line)
                out.append((re.sub(r"[^A-Za-z0-9_-]", "_", tool.get("group") or name), tool["name"]))
    return out


def catalog(real: list[tuple[str, str]], size: int) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    copy = 0
    while len(names) < size:
        for group, tool in real:
            name = f"{group}{copy or ''}__{tool}"
            if name not in seen and len(names) < size:
                seen.add(name)
                names.append(name)
        copy += 1
    return names


def copies(real: list[tuple[str, str]], size: int) -> list[str]:
    """Each real name once, then again as ``name__r1``, ``name__r2`` ... until ``size``."""
    tools = list(dict.fromkeys(tool for _, tool in real))
    return [f"{tool}__r{rep}" if rep else tool for rep in range(size // len(tools) + 1) for tool in tools][:size]


def misspell(name: str, rng: random.Random) -> str:
    """Two neighbouring letters swapped or one dropped, not the first nor the last two."""
    at = rng.randrange(1, max(2, len(name) - 2))
    if rng.random() < 0.5:
        return name[:at] + name[at + 1 : at + 2] + name[at] + name[at + 2 :]
    return name[:at] + name[at + 1 :]


def mistake(name: str, rng: random.Random) -> str:
    prefix, _, last = name.rpartition("__")
    kind = rng.choice(["edit", "edits", "swap", "drop prefix", "prefix", "words", "case"])
    at = rng.randrange(len(last))
    if kind == "edit":
        last = last[:at] + rng.choice("aeiourst") + last[at + 1 :]
    elif kind == "edits":
        last = last[:at] + last[at + 1 :]
        at = rng.randrange(len(last) or 1)
        last = last[:at] + rng.choice("aeiourst") + last[at:]
    elif kind == "swap" and len(last) > 2:
        at = min(at, len(last) - 2)
        last = last[:at] + last[at + 1] + last[at] + last[at + 2 :]
    elif kind == "drop prefix":
        prefix = ""
    elif kind == "prefix" and prefix:
        prefix = prefix[:-1] + "x"
    elif kind == "words":
        words = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", last)
        last = "_".join(words[::-1]) if len(words) > 1 else last.upper()
    else:
        last = last.swapcase()
    return f"{prefix}__{last}" if prefix else last


def median_s(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def timed(fn: Callable[[], list[str]], repeat: int) -> tuple[float, list[str]]:
    """The median time of ``fn`` over ``repeat`` calls, and its answer."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), answer


def found(meant: str, answer: list[str], exact: bool = False) -> bool:
    # a dropped prefix may be answered by any server's copy of the tool (not so for the
    # renamed copies, whose ``__r1`` is no server)
    last = meant.rpartition("__")[2]
    return meant in answer or (not exact and any(a.rpartition("__")[2] == last for a in answer))


def measure(pool: list[str], typos: list[tuple[str, str]], repeat: int, exact: bool = False) -> dict[str, float]:
    lookup = dict.fromkeys(pool, 0)
    dict_s = statistics.median(
        timeit.Timer("lookup.get(t)", globals={"lookup": lookup, "t": t}).timeit(20_000) / 20_000 for t, _ in typos
    )
    suggest._last.clear()
    first_s = median_s(lambda: close_names(typos[0][0], list(pool)), 1)
    miss = [timed(lambda t=t: close_names(t, list(pool)), 5) for t, _ in typos]  # type: ignore[misc]
    index = NameIndex(pool)
    held = [median_s(lambda t=t: index.close(t), 5) for t, _ in typos]  # type: ignore[misc]
    old = [timed(lambda t=t: difflib.get_close_matches(t, pool, n=3), repeat) for t, _ in typos]  # type: ignore[misc]
    return {
        "dict_s": dict_s,
        "miss_s": statistics.median(s for s, _ in miss),
        "held_s": statistics.median(held),
        "first_s": first_s,
        "difflib_s": statistics.median(s for s, _ in old),
        "found": sum(found(m, a, exact) for (_, m), (_, a) in zip(typos, miss, strict=True)) / len(typos),
        "difflib_found": sum(found(m, a, exact) for (_, m), (_, a) in zip(typos, old, strict=True)) / len(typos),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    ap.add_argument("--typos", type=int, default=30)
    ap.add_argument("--copies", action="store_true", help="renamed copies and typos as benchmarks/scale.py makes")
    args = ap.parse_args(argv)
    console = Console(width=140)
    real = real_names()
    if not real:
        console.print(f"[yellow]skipped: no datasets under {DATASETS}[/]")
        return 0
    table = Table(title="did you mean: one miss (median over the typed names); x = ratio to a dict lookup")
    cols = ["names", "dict lookup", "miss", "x dict", "index held", "x dict", "first miss", "difflib", "x dict"]
    for col in [*cols, "miss / difflib", "found", "difflib found"]:
        table.add_column(col, justify="right")
    typo = misspell if args.copies else mistake
    for size in args.sizes:
        pool = copies(real, size) if args.copies else catalog(real, size)
        rng, known = random.Random(size), set(pool)
        typos = [(typo(meant, rng), meant) for meant in rng.sample(pool, args.typos)]
        typos = [(typed, meant) for typed, meant in typos if typed not in known]
        r = measure(pool, typos, repeat=1 if size >= 50_000 else 3, exact=args.copies)
        table.add_row(
            f"{size:,}",
            f"{r['dict_s'] * 1e9:.0f} ns",
            f"{r['miss_s'] * 1e3:.2f} ms",
            f"{r['miss_s'] / r['dict_s']:,.0f}",
            f"{r['held_s'] * 1e3:.2f} ms",
            f"{r['held_s'] / r['dict_s']:,.0f}",
            f"{r['first_s'] * 1e3:.0f} ms",
            f"{r['difflib_s'] * 1e3:.1f} ms",
            f"{r['difflib_s'] / r['dict_s']:,.0f}",
            f"{r['miss_s'] / r['difflib_s']:.3f}",
            f"{r['found']:.0%}",
            f"{r['difflib_found']:.0%}",
        )
    console.print(table)
    console.print(
        "miss: close_names given a new list of the same names (as calls.py does): the index of the last "
        "pool is reused after a list comparison. index held: a NameIndex kept by the caller. first miss: "
        "the index built (once per catalog)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
