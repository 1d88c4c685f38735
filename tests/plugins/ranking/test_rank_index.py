"""``greenroom rank index CONFIG|CATALOG`` builds the indexes a run's first search reads:
after it, a runtime built from the same config (or from a config listing that catalog)
answers its first ToolSearch without building anything. A wrong path or config is a
clear error (exit 2); nothing a run would read indexed is exit 1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom import build_runtime
from greenroom_ranking import SearchRankingPlugin
from greenroom_ranking.cache import forget

PAGED_SERVER = Path(__file__).resolve().parents[2] / "core" / "mcp" / "paged_server.py"
WORDS = "weather city email send search issue pull request invoice refund translate text music play".split()


def write_catalog(path: Path, n: int = 60) -> list[str]:
    """A catalog of ``n`` tools; their names."""
    lines, names = [], []
    for i in range(n):
        a, b, c = WORDS[i % len(WORDS)], WORDS[(i * 5 + 3) % len(WORDS)], WORDS[(i * 3 + 1) % len(WORDS)]
        schema = {"type": "object", "properties": {f"{c}_id": {"type": "string", "description": f"The {c}"}}}
        names.append(f"{a}_{b}_{i}")
        lines.append(json.dumps({"name": names[-1], "description": f"{a.title()} the {b}", "parameters": schema}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return names


def write_config(folder: Path, extra: str = "", deferred: str = "") -> Path:
    """A config of ``tools.jsonl`` whose scripted model makes one ToolSearch, then ends
    (deferral on whatever the catalog's size: ``deferred`` adds to its section)."""
    script = folder / "script.jsonl"
    turns = [{"tool_calls": [{"name": "ToolSearch", "arguments": {"query": "weather in a city"}}]}, {"text": "done"}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    config = folder / "agent.toml"
    text = '[agent]\nmodel = "scripted:script.jsonl"\n\n[tools]\ncatalogs = ["tools.jsonl"]\n'
    text += f"{extra}\n[plugins.deferred-tools]\nenabled = true\n{deferred}"
    config.write_text(text, encoding="utf-8")
    return config


def rank_index(path: Path) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, as a deploy step runs it (``GREENROOM_HOME``
    is the test's)."""
    return subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "rank", "index", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )


def first_search(config: Path) -> dict[str, dict[str, int]]:
    """What a new process's runtime of ``config`` built and read from the store for its
    run's first ToolSearch."""
    forget()  # nothing shared in memory: a new process

    async def run() -> dict[str, dict[str, int]]:
        rt = build_runtime(config)
        try:
            await rt.run(rt.session(), "what is the weather")
            cache = rt.host.plugin("search-ranking").engine.cache
            return {"builds": dict(cache.builds), "loads": dict(cache.loads)}
        finally:
            await rt.aclose()

    return anyio.run(run)


def test_after_rank_index_of_a_config_its_runs_first_search_builds_nothing(
    tmp_path: Path, fresh_index_cache: Path
) -> None:
    pytest.importorskip("mcp_types", reason="needs the MCP SDK: pip install 'greenroom[mcp]'")
    names = write_catalog(tmp_path / "tools.jsonl")
    config = write_config(
        tmp_path,
        # an MCP server's 40 tools (a deferred group), a tool hidden, a tool kept eager, and
        # ranking settings of the config's own: each changes what a run indexes, or how
        f'\n[tools.policy]\ndeny = [{json.dumps(names[1])}]\n\n[[tools.mcp]]\nname = "paged"\n'
        f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(PAGED_SERVER))}]\n"
        'env = { PAGED_TOOLS = "40", PAGED_SIZE = "25" }\n\n'
        "[plugins.search-ranking]\nbm25_k1 = 1.4\n",
        deferred=f"never_defer = [{json.dumps(names[0])}]\n",
    )
    done = rank_index(config)
    assert done.returncode == 0, done.stderr
    folder = re.escape(str(fresh_index_cache / "ranking-index"))
    assert re.fullmatch(
        rf"99 tools indexed in [\d.]+ s: built text, bm25; already cached none; in {folder}\n", done.stdout
    )
    assert first_search(config) == {"builds": {}, "loads": {"text": 1, "bm25": 1}}


def test_after_rank_index_of_a_catalog_a_run_over_it_builds_nothing(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.jsonl"
    write_catalog(catalog)
    assert rank_index(catalog).returncode == 0
    again = rank_index(catalog)
    assert again.returncode == 0 and "built none; already cached text, bm25" in again.stdout
    assert first_search(write_config(tmp_path)) == {"builds": {}, "loads": {"text": 1, "bm25": 1}}


NEVER = '{"name": "always_here", "description": "Stays in the list", "deferrable": "never"}\n'


@pytest.mark.parametrize(
    ("files", "target", "code", "said"),
    [
        ({}, "agent.toml", 2, "agent.toml: no such file"),
        ({}, "tools.jsonl", 2, "tools.jsonl: catalog file not found"),
        ({"tools.yaml": "- a\n"}, "tools.yaml", 2, "expected a config (.toml) or a catalog (.jsonl, .json)"),
        ({"tools.jsonl": "{not json\n"}, "tools.jsonl", 2, "tools.jsonl"),
        ({"agent.toml": '[plugins.search-ranking]\nrankers = ["nope"]\n'}, "agent.toml", 2, "rankers"),
        ({"tools.jsonl": NEVER}, "tools.jsonl", 1, "no tool a search could find"),
        ({"agent.toml": '[tools]\ncatalogs = ["t.jsonl"]\n', "t.jsonl": NEVER}, "agent.toml", 1, "no tool"),
        (
            {"agent.toml": '[tools]\ncatalogs = ["t.jsonl"]\n[plugins]\ndisable = ["search-ranking"]\n'},
            "agent.toml",
            1,
            "search-ranking plugin is not enabled",
        ),
        (
            {"agent.toml": '[tools]\ncatalogs = ["t.jsonl"]\n[plugins.search-ranking]\nindex_cache = false\n'},
            "agent.toml",
            1,
            "index_cache is off",
        ),
    ],
    ids=[
        "no-config",
        "no-catalog",
        "neither",
        "bad-catalog",
        "bad-config",
        "none-searchable",
        "none-in-config",
        "off",
        "no-cache",
    ],
)
def test_a_wrong_path_or_config_or_nothing_to_index_is_a_clear_error(
    tmp_path: Path, files: dict[str, str], target: str, code: int, said: str
) -> None:
    write_catalog(tmp_path / "t.jsonl", 5)
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(plugin_cli(SearchRankingPlugin()), ["rank", "index", str(tmp_path / target)])
    assert result.exit_code == code, result.output
    assert said in " ".join(result.output.split()) and "Traceback" not in result.output


def test_a_store_that_cannot_be_written_is_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.write_text("a file, not a folder", encoding="utf-8")
    monkeypatch.setenv("GREENROOM_HOME", str(home))
    catalog = tmp_path / "tools.jsonl"
    write_catalog(catalog)
    result = CliRunner().invoke(plugin_cli(SearchRankingPlugin()), ["rank", "index", str(catalog)])
    assert result.exit_code == 1, result.output
    assert "could not be written" in " ".join(result.output.split())
