"""The command line, as a user drives it: inspect, run with sessions and traces, and the
config commands (the demo agent is their example config)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.gr_testutil import EXAMPLES
from typer.testing import CliRunner

from greenroom.cli import app

runner = CliRunner()
DEMO = EXAMPLES / "demo" / "demo.toml"


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_inspect_json_shows_each_tool_eager_or_deferred_with_tokens() -> None:
    result = invoke("inspect", str(DEMO), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    modes = {t["name"]: t for t in report["tools"]}
    assert len(modes) == 191 + 3  # the catalog, plus ToolSearch, deferred_tool_call and read_result
    assert modes["ToolSearch"]["mode"] == "plugin"  # sent, but not one of the agent's tools
    assert modes["docs_search"]["mode"] == "eager" and modes["docs_search"]["reason"] == "never_defer"
    assert modes["hr_get_employee"]["mode"] == "deferred" and modes["hr_get_employee"]["reason"] == "rule 'hr_*'"
    totals = report["totals"]
    assert totals["sent_tokens"] < totals["all_eager_tokens"] * 0.2
    assert totals["eager"] + totals["deferred"] == totals["tools"] == 191  # the baseline has no plugin tools
    assert totals["plugin"] == 3 and totals["hidden"] == 0


def test_inspect_table_for_people() -> None:
    result = invoke("inspect", str(DEMO))
    assert result.exit_code == 0
    assert "tokens on step 1" in result.output and "deferred" in result.output


def test_run_saves_and_resumes_a_session_and_writes_a_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREENROOM_DEMO_HOME", str(tmp_path / "home"))  # nothing learned yet
    session, trace = tmp_path / "s.json", tmp_path / "t.jsonl"
    first = invoke("run", str(DEMO), "checkout is slow", "--session", str(session), "--trace", str(trace), "-q")
    assert first.exit_code == 0, first.output
    assert "Dana Ortiz" in first.output
    saved = json.loads(session.read_text())
    assert saved["runs"] == 1 and saved["messages"][0]["content"] == "checkout is slow"
    kinds = [json.loads(line)["kind"] for line in trace.read_text().splitlines()]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert {"request", "response", "search", "tool_result", "resolve"} <= set(kinds)
    requests = [json.loads(line) for line in trace.read_text().splitlines() if '"request"' in line]
    assert len({r["prefix_hash"] for r in requests}) == 1
    assert all(r["tools_tokens"] > 0 and r["system_tokens"] > 0 for r in requests)
    second = invoke("run", str(DEMO), "and now?", "--session", str(session), "-q")
    assert second.exit_code == 0, second.output
    resumed = json.loads(session.read_text())
    assert resumed["runs"] == 2 and len(resumed["messages"]) > len(saved["messages"])


def test_run_reports_a_bad_config_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[agent]\nmax_steps = 0\nmodel = "nosuch:thing"\n')
    result = invoke("run", str(bad), "hi")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "bad.toml" in result.output


def test_unknown_provider_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "a.toml"
    cfg.write_text('[agent]\nmodel = "nosuch:thing"\n')
    result = invoke("run", str(cfg), "hi")
    assert result.exit_code == 2
    assert "agent.model: unknown model provider 'nosuch'" in result.output


def test_config_show_prints_the_merged_document(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text('[agent]\nid = "base"\nmax_steps = 4\n')
    child = tmp_path / "child.toml"
    child.write_text('extends = "base.toml"\n[agent]\nid = "child"\n')
    result = invoke("config", "show", str(child))
    assert result.exit_code == 0
    assert json.loads(result.output) == {"agent": {"id": "child", "max_steps": 4}}


def test_config_schema_of_a_plugin_and_of_the_whole_file() -> None:
    result = invoke("config", "schema", "deferred-tools")
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema["properties"]["strategy"]["enum"] == ["dispatch", "inject", "native"]
    assert schema["additionalProperties"] is False
    whole = json.loads(invoke("config", "schema").output)
    assert "deferred-tools" in whole["properties"]["plugins"]["properties"]
    assert invoke("config", "schema", "nope").exit_code == 2


def test_errors_print_install_hints_verbatim(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.toml"
    cfg.write_text('[agent]\nmodel = "nosuch:model-1"\n')
    result = runner.invoke(app, ["run", str(cfg), "hi"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    # rich would eat "[openai]" as markup if the message were not escaped
    assert "pip install 'greenroom[openai]'" in result.output
    assert "Traceback" not in result.output
