"""The docs' tables of measured figures, rendered from what the benchmarks wrote.

A benchmark that feeds the docs writes its figures (small JSON, committed) into
``docs/figures/NAME.json`` when run with ``--figures``. A table in README.md or
docs/*.md that shows them sits between two markers::

    <!-- figures: TABLE -->
    ...rendered here, never edited by hand...
    <!-- /figures -->

and ``RENDERERS[TABLE]`` renders it from those files. So a figure on a page is always
the one its benchmark printed last, and ``tests/test_figures.py`` fails when a page and
its figures differ (and, for token counts, which need no timing, when the figures
differ from what the code gives today).

    python benchmarks/figures.py           # rewrite every marked table
    python benchmarks/figures.py --check   # exit 1 naming each table that is not up to date

The benchmarks: ``tokens.py --figures`` (tokens), ``sessions.py --figures``
(session_costs), ``eval_priors.py --figures`` (eval_priors), ``priors.py --figures``
(priors_stores), ``results.py --figures`` (results), ``ranking_loo.py --figures`` (ranking_loo).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"
MARKED = re.compile(r"(<!-- figures: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /figures -->)", re.S)


def pages() -> list[Path]:
    """Every page that may hold marked tables."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


class FiguresMissing(LookupError):
    """A table's figures that no benchmark has written yet."""


def load(name: str) -> dict[str, Any]:
    path = FIGURES / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    except FileNotFoundError:
        raise FiguresMissing(f"{path.relative_to(ROOT)} is missing: run its benchmark with --figures") from None


def save(name: str, figures: dict[str, Any]) -> Path:
    """Write a benchmark's figures (in the order measured, a value a line: a re-run's diff reads well)."""
    FIGURES.mkdir(parents=True, exist_ok=True)
    path = FIGURES / f"{name}.json"
    path.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- formats


def count(n: float) -> str:
    return f"{n:,.0f}"


def ratio(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def share(x: float) -> str:
    return f"{x:.0%}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """A markdown table: the first ``left`` columns read left-aligned, numbers right."""
    rule = ["---" if i < left else "---:" for i in range(len(headers))]
    lines = [headers, rule, *rows]
    return "".join("| " + " | ".join(cells) + " |\n" for cells in lines)


def caption(text: str, name: str, source: str) -> str:
    """The line above a table: what was measured, and where the figures come from."""
    return f"*{text}: `docs/figures/{name}.json`, from `python benchmarks/{source} --figures`.*\n\n"


# ----------------------------------------------------------------------------- tokens

STRATEGY = {"dispatch-names": "dispatch, names"}


def tokens() -> str:
    f = load("tokens")
    s = f["settings"]
    rows = []
    for cat in f["catalogs"]:
        base = cat["strategies"]["all-eager"]
        for name, r in cat["strategies"].items():
            rows.append(
                [
                    f"{cat['name']} ({count(cat['tools'])})",
                    STRATEGY.get(name, name),
                    count(r["first_definitions"]),
                    ratio(r["first_definitions"] / base["first_definitions"]),
                    count(r["session_total"]),
                    ratio(r["session_total"] / base["session_total"]),
                    str(r["prefix_hashes"]),
                ]
            )
    head = ["catalog", "strategy", "step-1 definitions", "ratio", "session total", "ratio", "prefix hashes"]
    text = f"Step 1, and a {s['steps']}-step session with {s['discoveries']} discoveries, exact o200k tokens"
    return caption(text, "tokens", "tokens.py") + table(head, rows, left=2)


def fewer(f: dict[str, Any], catalog: str, strategy: str) -> float:
    """How much less of all-eager's step-1 definitions ``strategy`` sends, as a share."""
    per = next(c for c in f["catalogs"] if c["name"] == catalog)["strategies"]
    return 1 - per[strategy]["first_definitions"] / per["all-eager"]["first_definitions"]


# ----------------------------------------------------------------------------- session costs

PRICES = ("anthropic:claude-sonnet-4.5", "openai:gpt-5", "no-cache:claude-sonnet-4.5")


def session_costs() -> str:
    f = load("session_costs")
    s = f["settings"]
    rows = []
    for cat in f["catalogs"]:
        for price in PRICES:
            base = cat["strategies"]["all-eager"]["prices"][price]["cost"]
            for name, r in cat["strategies"].items():
                p = r["prices"].get(price)
                if p is None:
                    continue  # native-openai: OpenAI's prices only
                rows.append(
                    [
                        cat["name"],
                        price,
                        name,
                        count(p["input_tokens"]),
                        share(p["hit_rate"]),
                        str(r["prefixes"]),
                        f"{p['cost']:.4f}",
                        ratio(p["cost"] / base),
                    ]
                )
    head = ["catalog", "price", "strategy", "input tokens", "cache hit", "prefixes", "cost $", "x all-eager"]
    text = f"One session of {s['steps']} steps with {s['discoveries']} discoveries, exact o200k tokens"
    return caption(text, "session_costs", "sessions.py") + table(head, rows, left=3)


def cost_ratio(cat: dict[str, Any], strategy: str, price: str) -> float:
    per = cat["strategies"]
    return float(per[strategy]["prices"][price]["cost"] / per["all-eager"]["prices"][price]["cost"])


def session_costs_summary() -> str:
    f = load("session_costs")
    lines = []
    for cat in f["catalogs"]:
        mine = [ratio(cost_ratio(cat, "dispatch", p), 2) + "x" for p in PRICES]
        theirs = [ratio(cost_ratio(cat, "inject", p), 2) + "x" for p in PRICES]
        lines.append(
            f"- {cat['name']} ({count(cat['tools'])} tools): dispatch costs **{mine[0]}** of all-eager with "
            f"Anthropic's prompt caching, **{mine[1]}** with OpenAI's and **{mine[2]}** with no caching; "
            f"inject {theirs[0]}, {theirs[1]} and {theirs[2]}.\n"
        )
    return "".join(lines)


# ----------------------------------------------------------------------------- learned priors

ARM_LABEL = {"dispatch+priors": "dispatch + priors"}


def pm(mean: float | None, sd: float | None, fmt: str, suffix: str = "") -> str:
    """A mean over seeds with its standard deviation: ``0.69x ± 0.03``."""
    if mean is None:
        return "n/a"
    return f"{mean:{fmt}}{suffix}" + ("" if not sd else f" ± {sd:{fmt.lstrip('+')}}")


def arm_row(a: dict[str, Any]) -> list[str]:
    sd = a["spread"]
    name = ARM_LABEL.get(a["name"], a["name"])
    if a["over_window"] and a["over_window"] == a["sessions"]:
        refused = f"{count(a['largest_refused'])} a request, past the window: not sent"
        return [name, "0%", "-", "-", refused, "-", "-", "-", "-"]
    success = f"{a['success']:.0%}" + (f" ± {100 * sd['success']:.0f}" if sd["success"] else "")
    return [
        name,
        success,
        pm(a["searches_per_session"], sd["searches_per_session"], ".2f"),
        pm(a["steps_per_session"], sd["steps_per_session"], ".2f"),
        pm(a["input_tokens_per_session"], sd["input_tokens_per_session"], ",.0f"),
        pm(a["cost_per_session"], sd["cost_per_session"], ".4f"),
        pm(a["cost_no_cache_per_session"], sd["cost_no_cache_per_session"], ".4f"),
        pm(a["cost_ratio"], sd["cost_ratio"], ".3f", "x"),
        pm(a["prefix_changes"], sd["prefix_changes"], ".0f"),
    ]


def eval_priors() -> str:
    f = load("eval_priors")
    s = f["settings"]
    seeds = f"seeds {s['seed']} to {s['seed'] + s['seeds'] - 1}" if s["seeds"] > 1 else f"seed {s['seed']}"
    out = [
        caption(
            f"{s['sessions']} sessions of {s['requests']} requests for each of {seeds}: a stream of {s['stream']} "
            f"from a pool of {s['pool']} (Zipf s = {s['zipf']}), each back in a fresh wording while the dataset has "
            "one; simulated agent; mean ± standard deviation over the seeds; cost $ per session at Anthropic Sonnet "
            "list prices with prompt caching and without",
            "eval_priors",
            "eval_priors.py",
        )
    ]
    for d in f["datasets"]:
        st = d["stream"]
        window = max(a["context_window"] for a in d["arms"])
        out.append(
            f"{d['name']}: {count(st['requests'])} requests, {share(st['repeated'] / st['requests'])} of them worded "
            f"as an earlier one; context window {count(window)} tokens.\n\n"
        )
        head = [f"{d['name']} ({count(d['tools'])} tools)", "success", "searches", "steps", "input tokens"]
        head += ["cost $", "no cache $", "cost x all-eager", "prefix changes"]
        out.append(table(head, [arm_row(a) for a in d["arms"]]) + "\n")
    return "".join(out).rstrip("\n") + "\n"


def eval_priors_ratios() -> str:
    rows = []
    for d in load("eval_priors")["datasets"]:
        r, recall = d["ratios"], d["recall_at_5"]

        def times(key: str, r: dict[str, Any] = r) -> str:
            return pm(r[key]["mean"], r[key]["sd"], ".2f", "x")

        points = r["success_points"]
        rows.append(
            [
                d["name"],
                times("searches"),
                times("input_tokens"),
                times("cost"),
                times("cost_no_cache"),
                pm(points["mean"], points["sd"], "+.1f") + " points",
                f"{ratio(recall['with']['mean'])} / {ratio(recall['without']['mean'])}",
            ]
        )
    head = ["", "searches", "input tokens", "session cost", "no cache", "success", "held-out Recall@5 (with / without)"]
    return table(head, rows)


# ----------------------------------------------------------------------------- priors stores


def priors_stores() -> str:
    f = load("priors_stores")
    rows = []
    for store, cases in f["stores"].items():
        base = cases[0]
        for c in cases:
            rows.append(
                [
                    store,
                    str(c["writers"]),
                    str(c["saves"]),
                    count(c["rate"]),
                    ratio(c["rate"] / base["rate"], 2),
                    ratio(c["p50"]),
                    ratio(c["p95"]),
                    ratio(c["p50"] / base["p50"], 2),
                    str(c["lost"]),
                ]
            )
    head = ["store", "writers", "saves", "saves/s", "x 1 writer", "load p50 ms", "load p95 ms", "p50 x 1 writer"]
    text = f"{f['settings']['saves']} saves per writer process; {f['machine']}"
    return caption(text, "priors_stores", "priors.py") + table([*head, "lost"], rows)


# ----------------------------------------------------------------------------- results


def results() -> str:
    k, rows = load("results")["kept"], []
    for server, total in result_totals():
        for c in [*server["calls"], {"tool": "**all calls**", **total}]:
            rows.append(
                [server["name"], c["tool"], count(c["before"]), count(c["after"]), ratio(c["after"] / c["before"])]
            )
    text = "Result tokens of real calls before and after compaction, exact o200k; ratio after / before"
    return (
        caption(text, "results", "results.py")
        + table(["server", "tool", "before", "after", "ratio"], rows, left=2)
        + f"\nA {k['megabytes']} MB result ({count(k['lines'])} lines) over 25,000 tokens: cut alone {k['cut_ms']} ms, "
        f"cut and kept whole {k['cut_and_keep_ms']} ms ({ratio(k['cut_and_keep_ms'] / k['cut_ms'], 1)}x, in a worker "
        f"thread); read back by pattern {k['read_pattern_ms']} ms, 200 lines by offset {k['read_offset_ms']} ms.\n"
    )


def result_totals() -> list[tuple[dict[str, Any], dict[str, int]]]:
    """Each server's figures, and its totals over its calls."""
    servers = load("results")["servers"]
    return [(s, {k: sum(c[k] for c in s["calls"]) for k in ("before", "after")}) for s in servers]


# ----------------------------------------------------------------------------- ranking


def ranking_loo() -> str:
    f = load("ranking_loo")
    s = f["settings"]

    def weights(w: dict[str, float]) -> str:
        return f"{w['keyword']:g} / {w['bm25']:g} / {w['embedding']:g}"

    rows = [
        [
            fold["held_out"],
            weights(fold["chosen"]),
            ratio(fold["held_out_score"]),
            ratio(fold["shipped_score"]),
            f"{weights(fold['best'])}: {ratio(fold['best_score'])}",
        ]
        for fold in f["folds"]
    ]
    sizes = ", ".join(f"{n} {d['queries']} queries" for n, d in f["datasets"].items())
    text = (
        f"Recall@5 over the default lexical ranking's, mean of the full and keywords forms ({sizes}); "
        f"weights keyword / bm25 / embedding, keyword in {s['keyword']}, embedding in {s['embedding']}"
    )
    head = ["left out", "chosen on the others", "its score left out", "weights before", "best on it"]
    chosen = ", ".join(f"{n} {ratio(v)}" for n, v in f["chosen_scores"].items())
    shipped = f"{weights(f['shipped'])}"
    tail = (
        f"\nWeights whose worst dataset scores best: **{weights(f['chosen'])}** ({chosen}); "
        f"the preset's weights before: {shipped}"
    )
    if f["shipped_scores"] is not None:
        tail += " (" + ", ".join(f"{n} {ratio(v)}" for n, v in f["shipped_scores"].items()) + ")"
    return caption(text, "ranking_loo", "ranking_loo.py") + table(head, rows) + tail + ".\n"


# ----------------------------------------------------------------------------- README


def readme_measured() -> str:
    tok, costs, learned = load("tokens"), load("session_costs"), {d["name"]: d for d in load("eval_priors")["datasets"]}
    gh = next(c for c in costs["catalogs"] if c["name"] == "github_mcp")
    anthropic, none = PRICES[0], PRICES[2]
    hashes = {c["strategies"]["dispatch"]["prefix_hashes"] for c in tok["catalogs"]}
    seal, meta = learned["seal_tools"]["ratios"], learned["metatool"]["ratios"]
    seal_success = {a["name"]: a["success"] for a in learned["seal_tools"]["arms"]}
    s = load("eval_priors")["settings"]

    def times(r: dict[str, Any], key: str) -> str:
        return pm(r[key]["mean"], r[key]["sd"], ".2f", "x")

    rows = [
        [
            "tool-definition tokens on step 1, GitHub MCP (117 tools)",
            f"{fewer(tok, 'github_mcp', 'dispatch'):.1%} fewer than sending every schema "
            f"({fewer(tok, 'github_mcp', 'dispatch-names'):.1%} with the names-only listing)",
            "[deferred-tools.md](docs/deferred-tools.md#tokens-saved)",
        ],
        [
            f"input cost of a {costs['settings']['steps']}-step session, {costs['settings']['discoveries']} "
            "discoveries, GitHub MCP",
            f"dispatch {ratio(cost_ratio(gh, 'dispatch', anthropic), 2)}x of all-eager with Anthropic prompt "
            f"caching, {ratio(cost_ratio(gh, 'dispatch', none), 2)}x without; inject "
            f"{ratio(cost_ratio(gh, 'inject', anthropic), 2)}x / {ratio(cost_ratio(gh, 'inject', none), 2)}x",
            "[costs.md](docs/costs.md)",
        ],
        [
            "prompt-cache prefix over a session (dispatch)",
            "one hash on every catalog measured: tools array and system prompt byte-identical on every step"
            if hashes == {1}
            else f"{max(hashes)} hashes on some catalog",
            "[deferred-tools.md](docs/deferred-tools.md#what-the-model-sees)",
        ],
        [
            f"learned priors over {s['sessions']} sessions of {s['requests']} requests, {s['seeds']} seeds, "
            "seal_tools, `greenroom eval`",
            f"{times(seal, 'searches')} the searches, {times(seal, 'cost')} the session cost "
            f"({times(seal, 'cost_no_cache')} without caching), input tokens {times(seal, 'input_tokens')}, "
            f"success {share(seal_success['dispatch+priors'])} (without priors {share(seal_success['dispatch'])}); "
            f"metatool: {times(meta, 'cost')} the cost",
            "[priors.md](docs/priors.md#what-learning-is-worth)",
        ],
        [
            "result tokens after compaction, real calls of the test servers",
            "; ".join(f"{s['name']} {ratio(t['after'] / t['before'], 2)}x" for s, t in result_totals())
            + " of before (JSON minified, empty fields out)",
            "[performance.md](docs/performance.md#result-tokens-before-and-after-compaction)",
        ],
    ]
    return table(["what", "result", "where"], rows, left=3)


RENDERERS: dict[str, Callable[[], str]] = {
    "tokens": tokens,
    "session-costs": session_costs,
    "session-costs-summary": session_costs_summary,
    "eval-priors": eval_priors,
    "eval-priors-ratios": eval_priors_ratios,
    "priors-stores": priors_stores,
    "readme-measured": readme_measured,
    "results": results,
    "ranking-loo": ranking_loo,
}
"""Every marked table by name -> how it is rendered from ``docs/figures/``."""


# ----------------------------------------------------------------------------- pages


def marked(text: str) -> Iterator[re.Match[str]]:
    return MARKED.finditer(text)


def render(text: str, where: str = "") -> str:
    """``text`` with every marked table rendered anew."""

    def one(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in RENDERERS:
            raise KeyError(f"{where}: <!-- figures: {name} --> names no table; the tables are {', '.join(RENDERERS)}")
        return m.group(1) + RENDERERS[name]() + m.group(4)

    return MARKED.sub(one, text)


def stale() -> list[str]:
    """Each marked table whose page differs from its figures, as ``page: table``."""
    out = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for m in marked(text):
            if m.group("name") not in RENDERERS or m.group(1) + RENDERERS[m.group("name")]() + m.group(4) != m.group():
                out.append(f"{page.relative_to(ROOT)}: {m.group('name')}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 when a table is not up to date")
    args = ap.parse_args(argv)
    if args.check:
        late = stale()
        for item in late:
            print(f"not up to date: {item} (run: python benchmarks/figures.py)", file=sys.stderr)
        return 1 if late else 0
    for page in pages():
        text = page.read_text(encoding="utf-8")
        try:
            new = render(text, str(page.relative_to(ROOT)))
        except (FiguresMissing, KeyError) as exc:
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return 1
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
