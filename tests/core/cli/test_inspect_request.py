"""``greenroom inspect --request`` prints exactly what the model is sent on step 1, and
inspect needs no provider SDK: it counts tokens with greenroom's own tokenizer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from greenroom.cli import app

runner = CliRunner()


def config(tmp_path: Path) -> Path:
    tools = tmp_path / "tools.jsonl"
    tools.write_text(
        "\n".join(
            json.dumps({"name": f"tool_{i}", "description": f"Does thing {i} [with brackets].", "parameters": None})
            for i in range(3)
        ),
        encoding="utf-8",
    )
    path = tmp_path / "agent.toml"
    path.write_text(f'[agent]\nmodel = "openai:gpt-4o-mini"\n[tools]\ncatalogs = ["{tools.name}"]\n', encoding="utf-8")
    return path


def test_request_shows_the_system_tools_and_the_provider_body(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    result = runner.invoke(app, ["inspect", str(config(tmp_path)), "--request"], env={"OPENAI_API_KEY": ""})
    assert result.exit_code == 0, result.output
    sent = json.loads(result.output)
    assert sent["system"][0]["key"] == "agent"
    assert {t["name"] for t in sent["tools"]} == {"tool_0", "tool_1", "tool_2", "read_result"}
    body = sent["provider_body"]
    assert body["model"] == "gpt-4o-mini"
    assert [t["function"]["name"] for t in body["tools"]] == [t["name"] for t in sent["tools"]]


def test_inspect_works_without_the_provider_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # as if the extra were not installed
    cfg = config(tmp_path)
    result = runner.invoke(app, ["inspect", str(cfg), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["totals"]["tools"] == 3 and all(t["tokens"] > 0 for t in report["tools"])
    sent = json.loads(runner.invoke(app, ["inspect", str(cfg), "--request"]).output)
    assert sent["provider_body"] is None and "pip install 'greenroom[openai]'" in sent["provider_note"]
    ran = runner.invoke(app, ["run", str(cfg), "hi"])
    assert ran.exit_code != 0 and "greenroom[openai]" in " ".join(ran.output.split())  # run still needs it
