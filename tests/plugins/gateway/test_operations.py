"""What an operator runs a gateway with: ``/healthz`` (alive, touching nothing),
``/readyz`` (every upstream server listed and none failing to start, every plugin's
``greenroom_readiness`` ready; 503 naming what is not, and at once while stopping),
neither behind the token and neither saying anything secret; ``--log-format json``
(one JSON object per line, a line per request); flags checked with errors naming them."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from support.gr_testutil import plugin_cli
from support.serve_testutil import HttpGateway, hold_config, http_client, wait_until
from typer.testing import CliRunner

from greenroom import Plugin, Readiness, Runtime, build_runtime, hookimpl
from greenroom.plugins.discovery import PluginRecord, discover
from greenroom_gateway import GatewayPlugin
from greenroom_gateway.ops.health import ReadinessProbe
from greenroom_gateway.ops.http import Front

pytestmark = pytest.mark.anyio

SECRET = "hunter2-not-for-probes"


class StoreUp(Plugin):
    name = "store-up"

    @hookimpl
    def greenroom_readiness(self, runtime: Runtime) -> Iterable[Readiness] | None:
        return [Readiness("store one", True, "SELECT 1 answered")]


class StoreDown(Plugin):
    name = "store-down"

    @hookimpl
    async def greenroom_readiness(self, runtime: Runtime) -> Iterable[Readiness] | None:
        await anyio.sleep(0)
        return [Readiness("store two", False, "connection refused")]


class Raises(Plugin):
    name = "raises"

    @hookimpl
    def greenroom_readiness(self, runtime: Runtime) -> Iterable[Readiness] | None:
        raise RuntimeError(f"could not reach postgresql://app:{SECRET}@db/agents")


class Hangs(Plugin):
    name = "hangs"

    @hookimpl
    async def greenroom_readiness(self, runtime: Runtime) -> Iterable[Readiness] | None:
        await anyio.sleep_forever()
        return None


class Misshapen(Plugin):
    name = "misshapen"

    @hookimpl
    def greenroom_readiness(self, runtime: Runtime) -> Any:
        return "ready"


class NeedsNothing(Plugin):
    name = "needs-nothing"

    @hookimpl
    def greenroom_readiness(self, runtime: Runtime) -> Iterable[Readiness] | None:
        return None


def records(*plugins: type[Plugin]) -> list[PluginRecord]:
    mine = [PluginRecord(p.name, "probe-dist", "1.0", f"{p.name} = probes:{p.__name__}", cls=p) for p in plugins]
    return [*discover(), *mine]


def runtime_with(tmp_path: Path, extra: str = "", *plugins: type[Plugin]) -> Runtime:
    config = tmp_path / "probed.toml"
    config.write_text(
        '[agent]\nid = "probed"\nmodel = "scripted:"\ntool_timeout = 0.5\n'
        '[plugins]\ndisable = ["priors-persistence"]\n' + extra,
        encoding="utf-8",
    )
    return build_runtime(config, records=records(*plugins), offline_model=True)


async def inner(scope: Any, receive: Any, send: Any) -> None:
    """What the front stands before (the MCP app, here a stub that answers 200)."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"mcp"})


async def test_hook_greenroom_readiness(tmp_path: Path, gr_home: Path) -> None:
    """Each plugin answers for itself: one that is down, raises, hangs past the agent's
    tool_timeout or answers the wrong shape is not ready, named with its distribution,
    and the others are still asked; the probe says 503 naming each, and no secret."""
    rt = runtime_with(tmp_path, "", StoreUp, StoreDown, Raises, Hangs, Misshapen, NeedsNothing)
    try:
        front = Front(inner, ReadinessProbe(rt))
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(front), base_url="http://gw") as http:
            answer = await http.get("/readyz")
            assert answer.status_code == 503
            assert SECRET not in answer.text
            body = answer.json()
            assert body["status"] == "not ready"
            assert sorted(body["not_ready"]) == ["plugin hangs", "plugin misshapen", "plugin raises", "store two"]
            checks = {c["name"]: c for c in body["checks"]}
            assert checks["store one"] == {
                "name": "store one",
                "ready": True,
                "detail": "SELECT 1 answered",
                "plugin": "store-up",
                "distribution": "probe-dist 1.0",
            }
            assert checks["store two"]["detail"] == "connection refused"
            assert checks["plugin raises"]["detail"].startswith("greenroom_readiness failed: RuntimeError")
            assert "did not finish within 0.5 s" in checks["plugin hangs"]["detail"]
            assert "expected an iterable of Readiness" in checks["plugin misshapen"]["detail"]
            assert all(c["distribution"] == "probe-dist 1.0" for c in body["checks"])
            assert not any(c.get("plugin") == "needs-nothing" for c in body["checks"])

            assert (await http.get("/healthz")).json() == {"status": "alive"}
            assert (await http.post("/healthz")).status_code == 405
            assert (await http.get("/mcp")).text == "mcp"

            front.stopping = True  # the gateway stops: out of the load balancer at once
            stopping = await http.get("/readyz")
            assert (stopping.status_code, stopping.json()["status"]) == (503, "stopping")
            refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 503 and "stopping" in refused.json()["error"]["message"]
            assert (await http.get("/healthz")).status_code == 200
    finally:
        await rt.aclose()


async def test_ready_when_every_plugin_is(tmp_path: Path, gr_home: Path) -> None:
    rt = runtime_with(tmp_path, "", StoreUp, NeedsNothing)
    try:
        checks = await ReadinessProbe(rt).checks()
        assert [(c.name, c.ready) for c in checks] == [("store one", True)]
    finally:
        await rt.aclose()


async def test_upstream_servers_are_ready_once_listed_and_not_while_failing_to_start(
    tmp_path: Path, gr_home: Path
) -> None:
    from support.serve_testutil import HOLD_SERVER

    servers = f"""
[[tools.mcp]]
name = "held"
command = {sys.executable!r}
args = [{str(HOLD_SERVER)!r}]

[[tools.mcp]]
name = "broken"
command = "/nonexistent/greenroom-probe-server"

[[tools.mcp]]
name = "hidden"
command = "/nonexistent/greenroom-hidden-server"

[tools.policy]
deny = ["hidden__*"]
"""
    rt = await anyio.to_thread.run_sync(lambda: runtime_with(tmp_path, servers))
    try:
        checks = {c.name: c for c in await ReadinessProbe(rt).checks()}
        assert set(checks) == {"mcp server held", "mcp server broken"}  # all of hidden's tools are denied
        assert checks["mcp server held"].ready
        broken = checks["mcp server broken"]
        assert not broken.ready and "start failed" in broken.detail
        assert "/nonexistent" not in broken.detail  # a probe never hears a command line
    finally:
        await rt.aclose()


@pytest.mark.slow
async def test_probes_need_no_token_and_the_endpoint_does(tmp_path: Path, gr_home: Path) -> None:
    token = "s3cret-probe-token"
    gw = HttpGateway(hold_config(tmp_path), "--token-env", "GR_PROBE_TOKEN", env={"GR_PROBE_TOKEN": token})
    base = gw.url.removesuffix("/mcp")
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0)) as http:
            alive = await http.get(f"{base}/healthz")
            assert (alive.status_code, alive.json()) == (200, {"status": "alive"})
            ready = await http.get(f"{base}/readyz")
            assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
            assert token not in ready.text
            assert (await http.post(gw.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})).status_code == 401
    finally:
        assert gw.stop() == 0


@pytest.mark.slow
async def test_json_logs_are_one_object_a_line_with_a_line_per_request(
    tmp_path: Path, gr_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOLD_DIR", str(tmp_path))
    gw = HttpGateway(hold_config(tmp_path), "--log-format", "json")
    try:
        async with http_client(gw.url) as client:
            assert not (await client.call_tool("echo", {"text": "hi"})).is_error
            assert (await client.call_tool("no_such_tool", {})).is_error

        def requests() -> list[dict[str, Any]]:
            found = [json.loads(line) for line in list(gw.stderr) if '"tools/call"' in line]
            return [r for r in found if r.get("method") == "tools/call"]

        assert wait_until(lambda: len(requests()) == 2)
    finally:
        assert gw.stop() == 0
    assert wait_until(lambda: any('"received SIGTERM"' in line for line in gw.stderr))  # read to the end
    lines = [json.loads(line) for line in gw.stderr if line.strip()]  # every line is one JSON object
    for line in lines:
        assert {"time", "level", "logger", "message"} <= set(line)
    [listening] = [line for line in lines if "listening on" in line["message"]]
    assert listening["logger"] == "greenroom.serve" and listening["message"].endswith("/mcp")
    ok, failed = requests()
    assert (ok["tool"], ok["outcome"], failed["tool"], failed["outcome"]) == ("echo", "ok", "no_such_tool", "error")
    assert ok["caller"].startswith("connection:") and ok["caller"] == failed["caller"]  # one connection
    assert isinstance(ok["duration_ms"], float) and ok["duration_ms"] >= 0
    assert any(line["message"] == "received SIGTERM" for line in lines)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--transport", "http", "--max-body-bytes", "0"], "--max-body-bytes must be a positive number of bytes"),
        (["--transport", "http", "--drain-timeout", "-1"], "--drain-timeout must be a number of seconds"),
        (["--max-calls-per-client", "0"], "--max-calls-per-client must be 1 or more"),
        (["--log-format", "xml"], "--log-format must be 'text' or 'json'"),
        (["--drain-timeout", "5"], "--drain-timeout applies to --transport http only"),
    ],
)
def test_a_bad_flag_is_an_error_naming_it(tmp_path: Path, flags: list[str], said: str) -> None:
    result = CliRunner().invoke(plugin_cli(GatewayPlugin()), ["serve", str(hold_config(tmp_path)), *flags])
    assert result.exit_code == 2
    assert said in result.output


def test_a_bad_serve_key_is_an_error_naming_it(tmp_path: Path) -> None:
    config = hold_config(tmp_path, "[serve]\nmax_calls_per_client = 0\n")
    result = CliRunner().invoke(plugin_cli(GatewayPlugin()), ["serve", str(config)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert f"{config}: serve.max_calls_per_client: expected an integer >= 1, got 0" in said, said
