"""The otel plugin as a config enables it: OTLP/HTTP to the tests' receiver (the demo agent,
whose calls go through ToolSearch and the dispatcher), a collector that is down or hangs
(a warning; the run goes on), the console exporter, ``OTEL_SDK_DISABLED``, and the install
hint when the SDK is missing."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.gr_testutil import ROOT, free_port

from greenroom import abuild_runtime

pytestmark = pytest.mark.anyio

DEMO = ROOT / "plugins" / "greenroom_demo" / "agent" / "demo.toml"


def demo_config(tmp_path: Path, **otel: object) -> Path:
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in otel.items())
    path = tmp_path / "traced.toml"
    path.write_text(f'extends = {str(DEMO)!r}\n\n[plugins]\nenable = ["otel"]\n\n[plugins.otel]\n{lines}\n')
    return path


async def run_demo(path: Path) -> str:
    runtime = await abuild_runtime(path)
    try:
        outcome = await runtime.run(runtime.session(), "checkout is slow")
    finally:
        await runtime.aclose()  # flushes the exporters, bounded
    return outcome.stop_reason


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No learned priors: the demo searches for its tools and calls them through the dispatcher."""
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


async def test_the_demo_over_otlp_http(tmp_path: Path, fresh_home: Path, receiver) -> None:
    assert await run_demo(demo_config(tmp_path, endpoint=receiver.url)) == "final"
    (root,) = receiver.named("invoke_agent demo-oncall")
    assert root.service == "greenroom" and root.attributes["greenroom.run.searches"] >= 1
    assert {s.trace_id for s in receiver.spans} == {root.trace_id}
    tools = receiver.named("execute_tool ")
    names = {s.attributes["gen_ai.tool.name"] for s in tools}
    assert "deferred_tool_call" not in names  # every dispatched call is its real tool
    dispatched = [s for s in tools if s.attributes.get("greenroom.tool.requested") == "deferred_tool_call"]
    assert dispatched and all(s.parent_id == root.span_id for s in dispatched)
    searches = [s for s in tools if "greenroom.search.query" in s.attributes]
    assert searches and all(s.attributes["greenroom.search.hit_count"] >= 1 for s in searches)
    for search in searches:  # the ranking's scores and each hit's learned prior (none learned yet)
        hits = search.attributes["greenroom.search.hits"]
        assert len(search.attributes["greenroom.search.scores"]) == len(hits)
        assert search.attributes["greenroom.search.priors"] == [0.01] * len(hits)
    assert root.attributes["greenroom.priors.sessions"] == 0
    assert {s.attributes["gen_ai.tool.name"] for s in searches} == {"ToolSearch"}
    chats = receiver.named("chat ")
    assert chats and all(s.attributes["greenroom.deferral.tokens_saved"] > 0 for s in chats)
    assert len({s.attributes["greenroom.request.prefix_hash"] for s in chats}) == 1  # dispatch keeps the prefix
    assert {
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "greenroom.deferral.tokens_saved",
        "greenroom.run.searches",
    } <= receiver.metric_names


async def test_the_standard_environment_variables_are_honoured(
    tmp_path: Path, fresh_home: Path, receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-the-environment")
    assert await run_demo(demo_config(tmp_path)) == "final"  # an empty [plugins.otel] section
    (root,) = receiver.named("invoke_agent")
    assert root.service == "from-the-environment"


async def test_the_demo_over_otlp_grpc(tmp_path: Path, fresh_home: Path, grpc_receiver) -> None:
    path = demo_config(tmp_path, endpoint=grpc_receiver.url, protocol="grpc", metrics=False)
    assert await run_demo(path) == "final"
    assert "invoke_agent demo-oncall" in grpc_receiver.spans and "execute_tool ToolSearch" in grpc_receiver.spans


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
async def test_a_collector_that_is_down_is_a_warning(
    tmp_path: Path, fresh_home: Path, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="greenroom.otel")
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    path = demo_config(tmp_path, endpoint=endpoint, protocol=protocol, export_timeout=0.5)
    assert await run_demo(path) == "final"
    assert any("could not export spans" in r.getMessage() for r in caplog.records)


async def test_a_collector_that_hangs_is_a_warning(
    tmp_path: Path, fresh_home: Path, silent_collector, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="greenroom.otel")
    path = demo_config(tmp_path, endpoint=silent_collector.url, export_timeout=0.5)
    assert await run_demo(path) == "final"  # and aclose came back: the flush is bounded
    assert any("could not export spans" in r.getMessage() for r in caplog.records)


def test_the_console_exporter_writes_to_stderr_so_a_quiet_run_pipes_only_its_answer(
    tmp_path: Path, fresh_home: Path
) -> None:
    config = demo_config(tmp_path, protocol="console")
    env = {**os.environ, "GREENROOM_HOME": str(fresh_home), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "run", str(config), "checkout is slow", "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and '"name"' not in done.stdout  # the answer, and nothing else
    assert '"name": "invoke_agent demo-oncall"' in done.stderr and '"name": "execute_tool ToolSearch"' in done.stderr
    assert '"resource_metrics"' in done.stderr


async def test_otel_sdk_disabled_turns_it_off(
    tmp_path: Path, fresh_home: Path, receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert await run_demo(demo_config(tmp_path, endpoint=receiver.url)) == "final"
    assert receiver.requests == 0


def test_without_the_sdk_the_plugin_is_unusable_with_the_install_hint() -> None:
    script = (
        "import sys\n"
        "sys.modules['opentelemetry.sdk'] = None\n"  # what a machine without the extra has
        "from typer.testing import CliRunner\n"
        "from greenroom.cli import app\n"
        "print(CliRunner().invoke(app, ['plugins', '--json']).output)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    (row,) = [r for r in json.loads(out) if r["name"] == "otel"]
    assert row["status"] == "unusable"
    assert "pip install 'greenroom[otel]'" in row["unusable"]


def test_config_check_names_a_bad_key_of_the_section(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from greenroom.cli import app

    path = tmp_path / "bad.toml"
    path.write_text('[plugins]\nenable = ["otel"]\n\n[plugins.otel]\nprotocol = "http/json"\nexport_timeout = 0\n')
    result = CliRunner().invoke(app, ["config", "check", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "plugins.otel.protocol: expected one of 'http/protobuf', 'grpc', 'console'" in result.output
    assert "plugins.otel.export_timeout: expected a number > 0" in result.output
