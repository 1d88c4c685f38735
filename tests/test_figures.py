"""The docs' measured figures cannot go stale: every marked table on a page is what
``benchmarks/figures.py`` renders from ``docs/figures/``, and the figures that involve no
timing (token counts, session bills) are what the code gives today."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from support.gr_testutil import DATASETS, ROOT

BENCHMARKS = ROOT / "benchmarks"
needs_datasets = pytest.mark.skipif(
    not (DATASETS / "seal_tools" / "tools.jsonl").exists(), reason="../shared/datasets not present"
)


@pytest.fixture(scope="module")
def bench() -> Iterator[dict[str, ModuleType]]:
    """The benchmark scripts, imported as they import each other (from benchmarks/)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import figures
        import sessions
        import tokens

        yield {"figures": figures, "tokens": tokens, "sessions": sessions}
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_every_marked_table_is_rendered_from_its_figures(bench: dict[str, ModuleType]) -> None:
    assert bench["figures"].stale() == [], "a table differs from docs/figures/: run python benchmarks/figures.py"


def test_a_table_edited_by_hand_is_found_and_rendered_back(bench: dict[str, ModuleType]) -> None:
    figures = bench["figures"]
    page = (ROOT / "docs" / "deferred-tools.md").read_text(encoding="utf-8")
    (table,) = [m for m in figures.marked(page) if m.group("name") == "tokens"]
    edited = page.replace(table.group(), table.group().replace("| 24,996 |", "| 236 |"), 1)
    assert edited != page
    assert figures.render(edited) == page


def test_every_table_is_shown_and_every_figures_file_is_read(
    bench: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = bench["figures"]
    shown = [m.group("name") for page in figures.pages() for m in figures.marked(page.read_text(encoding="utf-8"))]
    assert sorted(set(shown)) == sorted(figures.RENDERERS), "a renderer whose table is on no page, or the reverse"
    read: set[str] = set()
    load = figures.load

    def recording(name: str) -> dict[str, Any]:
        read.add(name)
        return load(name)  # type: ignore[no-any-return]

    monkeypatch.setattr(figures, "load", recording)
    for render in figures.RENDERERS.values():
        render()
    assert read == {p.stem for p in figures.FIGURES.glob("*.json")}, "a figures file that no table shows"


@needs_datasets
def test_token_figures_are_what_the_code_sends_today(bench: dict[str, ModuleType]) -> None:
    committed = bench["figures"].load("tokens")
    s = committed["settings"]
    today = bench["tokens"].figures(s["steps"], s["discoveries"], s["sizes"])
    assert today == committed, "the runtime sends other token counts: run python benchmarks/tokens.py --figures"


@needs_datasets
def test_session_cost_figures_are_what_the_code_bills_today(bench: dict[str, ModuleType]) -> None:
    pytest.importorskip("openai")  # the native-openai rows are billed from the OpenAI provider's requests
    committed = bench["figures"].load("session_costs")
    s = committed["settings"]
    sessions = bench["sessions"]
    today = sessions.figures(sessions.replays(s["steps"], s["discoveries"]), s["steps"], s["discoveries"])
    assert today == committed, "sessions cost other figures: run python benchmarks/sessions.py --figures"


def test_eval_figures_carry_the_spread_over_seeds_and_the_cost_without_the_cache(bench: dict[str, ModuleType]) -> None:
    figures = bench["figures"]
    committed = figures.load("eval_priors")
    assert committed["settings"]["seeds"] > 1 and committed["settings"]["stream"] != "verbatim"
    for dataset in committed["datasets"]:
        assert dataset["stream"]["requests"] == committed["settings"]["sessions"] * 3 * committed["settings"]["seeds"]
        for arm in dataset["arms"]:
            assert arm["cost_no_cache_per_session"] >= arm["cost_per_session"]
            assert set(arm["spread"]) >= {"success", "searches_per_session", "input_tokens_per_session", "cost_ratio"}
        assert all(set(r) == {"mean", "sd"} for r in dataset["ratios"].values())
    shown = figures.eval_priors() + figures.eval_priors_ratios() + figures.readme_measured()
    assert " ± " in shown and "no cache $" in shown and "without caching" in shown
