"""The hybrid preset ships the weights chosen by leaving one dataset out
(``benchmarks/ranking_loo.py``): each dataset's weighting is chosen on the others, and the
preset is the weighting whose worst dataset scores best."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest
from support.gr_testutil import ROOT

from greenroom_ranking import HYBRID_SETTINGS


@pytest.fixture(scope="module")
def loo() -> Iterator[ModuleType]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import ranking_loo

        yield ranking_loo
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_preset_is_the_weighting_the_leave_one_out_table_chose() -> None:
    chosen = json.loads((ROOT / "docs" / "figures" / "ranking_loo.json").read_text(encoding="utf-8"))["chosen"]
    weights = HYBRID_SETTINGS["weights"]
    ranks = HYBRID_SETTINGS["rankers"]
    shipped = {r: (weights.get(r, 0.0) if r in ranks else 0.0) for r in ("keyword", "bm25", "embedding")}
    assert shipped == chosen
    assert all(w > 0 for r, w in weights.items() if r in ranks)  # a ranker at 0 is not run at all


def test_each_dataset_is_judged_by_weights_chosen_on_the_others(
    loo: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loo, "KEYWORD", (0.0, 0.3))
    monkeypatch.setattr(loo, "EMBEDDING", (1.0, 3.0))
    scores = {  # (keyword, embedding) -> score: "a" likes the embedding, "b" does not
        "a": {(0.0, 1.0): 1.10, (0.0, 3.0): 1.30, (0.3, 1.0): 1.05, (0.3, 3.0): 1.20},
        "b": {(0.0, 1.0): 1.02, (0.0, 3.0): 0.95, (0.3, 1.0): 1.01, (0.3, 3.0): 0.97},
    }
    measured = {
        name: {"weightings": [{"weights": w, "score": by[(w["keyword"], w["embedding"])]} for w in loo.grid()]}
        for name, by in scores.items()
    }
    chosen = loo.choose(measured)
    folds = {f["held_out"]: f for f in chosen["folds"]}
    # left out, "a" is judged by what "b" prefers, and "b" by what "a" prefers
    assert (folds["a"]["chosen"]["embedding"], folds["a"]["held_out_score"]) == (1.0, 1.10)
    assert (folds["b"]["chosen"]["embedding"], folds["b"]["held_out_score"]) == (3.0, 0.95)
    assert folds["b"]["best_score"] == 1.02
    # shipped: the weighting whose worst dataset is best
    assert chosen["chosen"] == {"keyword": 0.0, "bm25": 1.0, "embedding": 1.0}
