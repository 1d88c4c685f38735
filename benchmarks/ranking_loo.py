"""Hybrid fusion weights that hold on data nobody tuned for: chosen by leaving one dataset out.

For every labelled dataset in ``../shared/datasets`` (seal_tools, metatool: github_mcp has
no queries), each weighting of the hybrid ranker (keyword, bm25, embedding; weighted
fusion, everything else as ``HYBRID_SETTINGS``) ranks an evenly spaced sample of its
queries in both forms (the full request, and the keywords a model sends); a dataset's
score for a weighting is the mean over the two forms of its Recall@5 over the default
lexical ranking's on the same queries, so datasets of different difficulty count alike.

Leave one out: for each dataset, the weighting with the best mean score on the *other*
datasets is taken and measured on the one left out, beside the weights the preset had
before (``BEFORE``) and the best any weighting reaches there (what tuning on it would
give). The preset ships the weighting whose worst dataset scores best
(``HYBRID_SETTINGS``; a keyword weight of 0 drops that ranker from it).

    python benchmarks/ranking_loo.py [--limit 300] [--figures]

Needs the ``embeddings`` extra and the bundled model; results go to
benchmarks/results/ranking_loo.json, and ``--figures`` writes docs/figures/ranking_loo.json
and the table in docs/ranking.md (``benchmarks/figures.py``). Datasets absent: says so,
exits 0.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from greenroom_ranking.config import HYBRID_SETTINGS, RankingConfig
from greenroom_ranking.evaluate import evaluate, load_queries, load_tools
from greenroom_ranking.extra import missing_extra

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("GREENROOM_DATASETS", ROOT.parent / "shared" / "datasets"))
RESULTS = ROOT / "benchmarks" / "results" / "ranking_loo.json"
FORMS = ("full", "keywords")
KEYWORD = (0.0, 0.3, 0.6, 1.0)
EMBEDDING = (0.5, 1.0, 1.5, 2.0, 3.0)
"""The grid: bm25's weight is 1 (weighted fusion only cares about the ratios)."""
RANKERS = ("keyword", "bm25", "embedding")
BEFORE = {"keyword": 0.3, "bm25": 1.0, "embedding": 1.0}
"""The hybrid preset's weights before this benchmark chose them (tuned on the even query
positions of both datasets; docs/ranking.md)."""


def grid() -> list[dict[str, float]]:
    return [{"keyword": k, "bm25": 1.0, "embedding": e} for k, e in itertools.product(KEYWORD, EMBEDDING)]


def label(weights: dict[str, float]) -> str:
    return f"{weights['keyword']:g} / {weights['bm25']:g} / {weights['embedding']:g}"


def measure(limit: int, console: Console) -> dict[str, Any]:
    """Per dataset: the default's Recall@5 per form, and each weighting's."""
    out: dict[str, Any] = {}
    for folder in sorted(p for p in DATASETS.iterdir() if (p / "queries.jsonl").exists()):
        tools = load_tools(folder / "tools.jsonl")
        queries = load_queries(folder / "queries.jsonl", limit)
        base = {form: evaluate(tools, queries, "default", form=form).recall_at_5 for form in FORMS}
        rows = []
        for weights in grid():
            config = RankingConfig(**{**HYBRID_SETTINGS, "rankers": RANKERS, "weights": weights})
            recall = {form: evaluate(tools, queries, "default", form=form, config=config).recall_at_5 for form in FORMS}
            score = sum(recall[f] / base[f] for f in FORMS) / len(FORMS)
            rows.append({"weights": weights, "recall_at_5": recall, "score": score})
            console.print(f"{folder.name} {label(weights)}: {score:.4f}", highlight=False)
        out[folder.name] = {"tools": len(tools), "queries": len(queries), "default": base, "weightings": rows}
    return out


def choose(measured: dict[str, Any]) -> dict[str, Any]:
    """Leave one out per dataset, and the weighting whose worst dataset scores best."""

    def score(name: str, weights: dict[str, float]) -> float:
        return next(r["score"] for r in measured[name]["weightings"] if r["weights"] == weights)

    shipped = BEFORE
    names = list(measured)
    folds = []
    for held in names:
        others = [n for n in names if n != held]
        picked = max(grid(), key=lambda w: (sum(score(n, w) for n in others) / len(others), -w["embedding"]))
        best = max(grid(), key=lambda w: score(held, w))
        folds.append(
            {
                "held_out": held,
                "chosen": picked,
                "held_out_score": score(held, picked),
                "shipped_score": score(held, shipped) if shipped in grid() else None,
                "best": best,
                "best_score": score(held, best),
            }
        )
    robust = max(grid(), key=lambda w: (min(score(n, w) for n in names), sum(score(n, w) for n in names)))
    return {
        "folds": folds,
        "chosen": robust,
        "chosen_scores": {n: score(n, robust) for n in names},
        "shipped": shipped,
        "shipped_scores": {n: score(n, shipped) for n in names} if shipped in grid() else None,
    }


def figures(measured: dict[str, Any], chosen: dict[str, Any], limit: int) -> dict[str, Any]:
    """What docs/ranking.md shows (rounded to four places, so a figure reads the same everywhere)."""

    def r4(x: float | None) -> float | None:
        return None if x is None else round(x, 4)

    folds = [
        {
            **f,
            "held_out_score": r4(f["held_out_score"]),
            "shipped_score": r4(f["shipped_score"]),
            "best_score": r4(f["best_score"]),
        }
        for f in chosen["folds"]
    ]
    return {
        "settings": {"limit": limit, "forms": list(FORMS), "keyword": list(KEYWORD), "embedding": list(EMBEDDING)},
        "datasets": {n: {"tools": m["tools"], "queries": m["queries"]} for n, m in measured.items()},
        "folds": folds,
        "chosen": chosen["chosen"],
        "chosen_scores": {n: r4(s) for n, s in chosen["chosen_scores"].items()},
        "shipped": chosen["shipped"],
        "shipped_scores": None
        if chosen["shipped_scores"] is None
        else {n: r4(s) for n, s in chosen["shipped_scores"].items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=300, help="queries per dataset (an evenly spaced sample)")
    parser.add_argument("--figures", action="store_true", help="write docs/figures/ranking_loo.json and the table")
    args = parser.parse_args()
    console = Console()
    problem = missing_extra()
    if problem is not None:
        console.print(f"[yellow]{problem}[/]")
        return
    if not DATASETS.exists():
        console.print(f"[yellow]no datasets under {DATASETS}: nothing to measure[/]")
        return
    measured = measure(args.limit, console)
    chosen = choose(measured)
    for fold in chosen["folds"]:
        console.print(
            f"left out {fold['held_out']}: chosen {label(fold['chosen'])} -> {fold['held_out_score']:.4f} "
            f"(shipped {fold['shipped_score']}, best {label(fold['best'])} {fold['best_score']:.4f})",
            highlight=False,
        )
    console.print(f"worst dataset best: {label(chosen['chosen'])} {chosen['chosen_scores']}", highlight=False)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"measured": measured, "chosen": chosen}, indent=2) + "\n", encoding="utf-8")
    console.print(f"written {RESULTS}")
    if args.figures:
        import figures as docs_figures  # beside this script

        console.print(f"written {docs_figures.save('ranking_loo', figures(measured, chosen, args.limit))}")
        docs_figures.main([])


if __name__ == "__main__":
    main()
