"""``greenroom priors report``: per agent, the tools used most and least, tools never used
(with the config), failed searches, and suggested never_defer, rules and policy denials
with their evidence; as JSON, and as tables that fit 80 columns in a pipe."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom_priors import Observation, PriorsPlugin, fold_document

NARROW = {"COLUMNS": "80"}
GROUPS = {"time": ("time__get_current_time", "time__convert_time"), "slack": ("slack__post", "slack__read")}
SEARCH = "look up the weather forecast for tomorrow in a city far away from here"


def history(sessions: int = 24) -> dict[str, Any]:
    """Most sessions call time__get_current_time; one in four also converts; nobody uses
    slack or the ``ping`` tool the config keeps eager; one search keeps failing."""
    doc = None
    for i in range(sessions):
        used = {"time__get_current_time": 1.0, **({"time__convert_time": 0.5} if i % 4 == 0 else {})}
        failed = [(SEARCH, ("time__convert_time",))] if i % 6 == 0 else []
        doc = fold_document(doc, Observation(used, {n: 1 for n in used}, steps=2, failed=failed), now=f"T{i:02d}")
    assert doc is not None
    return doc


@pytest.fixture
def app() -> typer.Typer:
    return plugin_cli(PriorsPlugin())  # type: ignore[no-any-return]


def stored(app: typer.Typer, tmp_path: Path, doc: dict[str, Any]) -> str:
    url = f"sqlite://{tmp_path / 'priors.sqlite3'}"
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    done = CliRunner().invoke(app, ["priors", "import", "ops", str(tmp_path / "doc.json"), "--store", url])
    assert done.exit_code == 0, done.output
    return url


def config(tmp_path: Path, url: str) -> Path:
    lines = []
    for group, names in GROUPS.items():
        for name in names:
            params = {"type": "object", "properties": {"q": {"type": "string"}}}
            row = {"name": name, "description": f"{name} tool", "parameters": params, "group": group}
            lines.append(json.dumps(row))
    lines.append(json.dumps({"name": "ping", "description": "Ping.", "parameters": {"type": "object"}}))
    (tmp_path / "tools.jsonl").write_text("\n".join(lines) + "\n")
    path = tmp_path / "agent.toml"
    path.write_text(
        f'[agent]\nid = "ops"\nmodel = "scripted:"\n\n[tools]\ncatalogs = ["tools.jsonl"]\n\n'
        f'[plugins.deferred-tools]\nenabled = true\nnever_defer = ["ping"]\n\n'
        f'[plugins.priors-persistence]\nstore = "{url}"\n'
    )
    return path


def test_the_report_says_what_is_used_what_failed_and_what_to_change(app: typer.Typer, tmp_path: Path) -> None:
    url = stored(app, tmp_path, history())
    done = CliRunner().invoke(app, ["priors", "report", "ops", "--json", "--config", str(config(tmp_path, url))])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert (report["agent"], report["sessions"], report["catalog"]) == ("ops", 24, 5)
    assert [r["tool"] for r in report["most_used"]] == ["time__get_current_time", "time__convert_time"]
    assert report["most_used"][0]["share"] == pytest.approx(1.0)
    assert report["never_used"] == ["ping", "slack__post", "slack__read"]
    (failed,) = report["failed_searches"]
    assert (failed["query"], failed["count"], failed["found"]) == (SEARCH, 4, ["time__convert_time"])
    suggested = {(s["kind"], s["config"]): s["evidence"] for s in report["suggestions"]}
    assert suggested[("never_defer", '[plugins.deferred-tools] never_defer = ["time__get_current_time"]')] == (
        "called in 100% of recent sessions (24 calls)"
    )
    deny = suggested[("deny", '[tools.policy] deny = ["slack__*"]')]
    assert deny == "none of the 2 tools of slack called in 24 sessions"
    assert suggested[("rule", '[plugins.deferred-tools] never_defer: remove "ping"')].startswith(
        "eager by never_defer, never called in 24 sessions"
    )
    assert suggested[("rule", '[[plugins.deferred-tools.rules]] tool = "time__*", mode = "eager"')] == (
        "time (2 tools) called in 100% of recent sessions"
    )


def test_the_report_reads_at_80_columns_in_a_pipe(app: typer.Typer, tmp_path: Path) -> None:
    url = stored(app, tmp_path, history())
    done = CliRunner().invoke(app, ["priors", "report", "ops", "--store", url], env=NARROW)
    assert done.exit_code == 0, done.output
    text = done.stdout
    assert "\x1b[" not in text  # no colour codes in a pipe
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "never used: give --config" in text
    assert "failed searches" in text and re.search(r"look up the weather\s", text)
    assert "never_defer" in text and "called in 100% of recent sessions" in " ".join(text.split())


def test_a_young_agent_gets_no_suggestions_and_an_old_document_still_reports(app: typer.Typer, tmp_path: Path) -> None:
    young = history(sessions=3)
    old = {"format": "greenroom.priors/1", "sessions": 40, "updated": "T", "tools": {"a": {"p": 0.4, "calls": 9}}}
    for doc, expect in ((young, 3), (old, 40)):
        url = stored(app, tmp_path / str(expect), doc) if (tmp_path / str(expect)).mkdir() is None else ""
        done = CliRunner().invoke(app, ["priors", "report", "ops", "--json", "--store", url])
        assert done.exit_code == 0, done.output
        report = json.loads(done.stdout)
        assert report["sessions"] == expect and report["suggestions"] == []
    assert report["most_used"] == [{"tool": "a", "share": None, "p": 0.4, "calls": 9, "last_used": None}]
