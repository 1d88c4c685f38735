"""The scale benchmark's harness (benchmarks/scale.py) builds the catalogs it claims and
reports every measurement in the shape its tables, plot and docs read; no figure is
checked here (speed belongs to the benchmark's own run)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from rich.console import Console
from support.gr_testutil import DATASETS, ROOT

from greenroom.tools.catalog import load_catalog

pytestmark = pytest.mark.skipif(not (DATASETS / "seal_tools" / "tools.jsonl").exists(), reason="no datasets")


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> dict[str, ModuleType]:
    """The harness's modules, imported as the script imports them (from benchmarks/)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import scale
    import scale_catalog
    import scale_report

    return {"scale": scale, "catalog": scale_catalog, "report": scale_report}


def test_catalog_has_the_size_asked_with_whole_realistic_groups(bench: dict[str, ModuleType], tmp_path: Path) -> None:
    built = bench["catalog"].build(300, tmp_path)
    tools = load_catalog(built.path)  # what a config's [tools] catalogs would load
    assert len(tools) == len(built.names) == 300
    assert [t.descriptor.name for t in tools] == built.names
    assert sum(built.groups.values()) == 300
    assert all(t.descriptor.group in built.groups for t in tools)
    assert 1 < len(built.groups) < 100  # tools come in groups, not one group each
    assert any(t.descriptor.parameters.get("properties") for t in tools)  # schemas kept
    assert built.texts[0] == f"{tools[0].descriptor.name} {tools[0].descriptor.description}"


def test_a_catalog_larger_than_the_datasets_repeats_them_under_new_names(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    base = sum(len(records) for _, records in bench["catalog"].base_groups())
    built = bench["catalog"].build(base + 50, tmp_path)
    assert len(set(built.names)) == base + 50
    repeated = built.names[base:]
    assert all(n.endswith("__r1") for n in repeated)
    assert {n.removesuffix("__r1") for n in repeated} <= set(built.names[:base])
    assert any(g.endswith("_r1") for g in built.groups)
    assert not (ROOT / "benchmarks" / "catalog.jsonl").exists()  # nothing generated in the project


def test_a_quick_run_reports_every_measurement_in_shape(bench: dict[str, ModuleType], tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    argv = ["--sizes", "300", "--quick", "--only", "listing,search,misspelled,steps", "--json", str(out)]
    assert bench["scale"].main(argv) == 0
    results: dict[str, Any] = json.loads(out.read_text())
    assert results["sizes"] == [300]
    at = results["by_size"]["300"]
    assert at["catalog"]["tools"] == 300
    for part in ("listing", "search", "misspelled"):
        assert "error" not in at[part], at[part]
    assert set(at["steps"]) == {"dispatch", "inject", "native"}
    assert all("error" not in s and s["step_us"] > 0 and s["ratio"] > 0 for s in at["steps"].values()), at["steps"]
    assert at["search"]["searches"] == bench["scale"].QUICK.searches
    assert at["search"]["p50_ms"] > 0 and at["search"]["bm25s_p50_ms"] > 0 and at["search"]["ratio"] > 0
    assert at["misspelled"]["hint"].startswith("there is no tool named")
    assert 0 <= at["misspelled"]["suggested"] <= at["misspelled"]["misses"] == bench["scale"].QUICK.misses
    listing = at["listing"]
    assert listing["budget"] > 0 and listing["tokens"] > 0
    assert (listing["groups"], listing["tools"]) == (at["catalog"]["groups"], 300)
    assert 0 <= listing["groups_named"] <= listing["groups"] and 0 <= listing["tools_named"] <= 300

    text = io.StringIO()
    bench["report"].print_report(Console(file=text, width=80), results)
    report = text.getvalue()
    assert "ToolSearch p50 vs plain bm25s" in report and "| 300 " in report  # Markdown when not a terminal
    assert max(len(line) for line in report.splitlines()) <= 80


def test_a_failed_measurement_is_recorded_and_reported(bench: dict[str, ModuleType]) -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("listing is too long\nfor the tokenizer")

    part = bench["scale"].attempt(broken)
    assert part["error"] == "RuntimeError: listing is too long for the tokenizer"
    assert part["where"] and "broken" in part["where"][-1]
    results = {"sizes": [100000], "by_size": {"100000": {"listing": part}}}
    text = io.StringIO()
    bench["report"].print_report(Console(file=text, width=80), results)
    assert "failed [1]" in text.getvalue()
    assert "[1] 100,000 tools, listing: RuntimeError: listing is too long" in text.getvalue()
