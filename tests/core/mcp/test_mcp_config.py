"""MCP servers the way users declare them: ``[[tools.mcp]]`` in a config file, built by
``build_runtime`` or run by the ``greenroom`` command, with the deferred-tools plugin
turning each server into a group. Real servers (mcp-server-time, mcp-server-git), the
scripted model reading a JSONL script."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")
pytest.importorskip("mcp_server_time", reason="needs mcp-server-time (pip install mcp-server-time)")

from typer.testing import CliRunner

from greenroom import events as ev
from greenroom.cli import app
from greenroom.compose.build import build_runtime
from greenroom.config import ConfigError, ConfigErrors
from greenroom.run.runtime import Runtime
from greenroom_deferred import DeferralState

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

runner = CliRunner()
HERE = Path(__file__).resolve().parent
DEFERRAL_KEY = "greenroom_deferred.state.DeferralState"  # its key in a saved session


# ----------------------------------------------------------------------------- helpers


def toml_str(value: str) -> str:
    # a JSON string is a valid TOML basic string (paths with backslashes included)
    return json.dumps(value)


def time_server(name: str = "time", **keys: Any) -> str:
    lines = [
        "[[tools.mcp]]",
        f"name = {toml_str(name)}",
        f"command = {toml_str(sys.executable)}",
        'args = ["-m", "mcp_server_time"]',
    ]
    lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def git_server() -> str:
    # the repository path is relative: a server runs in its config file's folder
    return (
        "[[tools.mcp]]\n"
        'name = "git"\n'
        f"command = {toml_str(sys.executable)}\n"
        'args = ["-m", "mcp_server_git", "--repository", "repo"]\n'
        'description = "The project\'s git repository."\n'
    )


def write_config(folder: Path, servers: str, *, strategy: str | None = "dispatch", extra: str = "") -> Path:
    """``agent.toml`` with the servers; deferral forced on with ``strategy`` (None: the
    deferred-tools plugin is disabled)."""
    if strategy is None:
        plugins = '[plugins]\ndisable = ["deferred-tools"]\n'
    else:
        plugins = f"[plugins.deferred-tools]\nenabled = true\nstrategy = {toml_str(strategy)}\n"
    path = folder / "agent.toml"
    path.write_text(f'[agent]\nmodel = "scripted:script.jsonl"\nmax_steps = 8\n\n{extra}{servers}\n{plugins}')
    return path


def write_script(folder: Path, *turns: dict[str, Any]) -> None:
    (folder / "script.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))


def load(group: str, names: list[str] | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"group_id": group}
    if names is not None:
        args["tool_names"] = names
    return {"tool_calls": [{"name": "load_tools", "arguments": args}]}


def dispatch(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "deferred_tool_call", "arguments": {"tool_name": name, "arguments": args}}]}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def tool_results(session: Any) -> list[Any]:
    return [m for m in session.messages if m.role == "tool"]


def build(path: Path, events: list[ev.Event] | None = None) -> Runtime:
    bus = ev.EventBus()
    if events is not None:
        bus.subscribe(events.append)
    return build_runtime(path, events=bus)


def prefix_hashes(events: list[ev.Event]) -> list[str]:
    """The runtime's hash of each request's cacheable prefix (tools array + stable system)."""
    return [e.prefix_hash for e in events if isinstance(e, ev.RequestSent)]


def group_loads(events: list[ev.Event]) -> list[str]:
    return [e.group for e in events if isinstance(e, ev.GroupLoaded) and e.error is None]


# ----------------------------------------------------------------------------- a whole run


async def test_a_dispatch_run_over_two_servers_from_a_config_file(
    tmp_path: Path, git_repo: Path, pids: Callable[[str], list[int]], no_leftovers: None
) -> None:
    """load_tools, a dispatched call, an implicit load of an unloaded group, and invalid
    arguments answered with every problem and the schema; closing stops both servers."""
    cfg = write_config(tmp_path, time_server() + git_server())
    write_script(
        tmp_path,
        load("mcp:time"),
        dispatch("time__get_current_time", {"timezone": "Asia/Tokyo"}),
        dispatch("git__git_status", {"repo_path": str(git_repo)}),  # mcp:git was never loaded
        dispatch("time__convert_time", {"source_timezone": "UTC", "time": 1200}),
        text("done"),
    )
    events: list[ev.Event] = []
    rt = build(cfg, events)
    try:
        session = rt.session()
        outcome = await session.run("What time is it in Tokyo, and is the repo clean?")
        assert len(pids("mcp_server_time")) == 1 and len(pids("mcp_server_git")) == 1
    finally:
        await rt.aclose()
    assert outcome.stop_reason == "final"
    system = rt.model.requests[0].system_text
    assert "- `mcp:time` — time: Tools of the MCP server time (2 tools)" in system
    assert "- `mcp:git` — git: The project's git repository." in system
    assert [t.name for t in rt.model.requests[0].tools] == [
        "read_result",
        "ToolSearch",
        "deferred_tool_call",
        "load_tools",
    ]

    loaded, tokyo, status, invalid = tool_results(session)
    body = json.loads(loaded.content)
    assert body["tool_names"] == ["time__convert_time", "time__get_current_time"] and body["expanded"]
    assert [s["name"] for s in body["schemas"]] == body["tool_names"]
    assert not tokyo.is_error and '"timezone":"Asia/Tokyo"' in tokyo.content
    assert tokyo.name == "time__get_current_time"  # the model's call, resolved to the real tool
    assert not status.is_error and "On branch main" in status.content
    assert invalid.is_error and "invalid arguments for 'time__convert_time'" in invalid.content
    assert "1200 is not of type 'string'" in invalid.content
    assert "'target_timezone' is a required property" in invalid.content
    assert '"required": ["source_timezone", "time", "target_timezone"]' in invalid.content

    assert group_loads(events) == ["mcp:time", "mcp:git"]
    assert session.state[DeferralState].expansion == {"mcp:time": None, "mcp:git": None}
    assert len(set(prefix_hashes(events))) == 1


async def test_the_prefix_is_byte_identical_over_loads_calls_and_a_resume(
    tmp_path: Path, git_repo: Path, pids: Callable[[str], list[int]], no_leftovers: None
) -> None:
    """A second runtime (a later process) resumes the session from the listing cache: no
    server starts until a tool is needed, and every request of both runtimes has the same
    cacheable prefix."""
    cfg = write_config(tmp_path, time_server() + git_server())
    write_script(tmp_path, load("mcp:time"), dispatch("time__get_current_time", {"timezone": "UTC"}), text("ok"))
    first_events: list[ev.Event] = []
    first = build(cfg, first_events)
    try:
        session = first.session()
        await session.run("time?")
        saved = session.save(tmp_path / "session.json")
    finally:
        await first.aclose()

    write_script(
        tmp_path,
        text("Nothing to look up."),
        dispatch("git__git_log", {"repo_path": str(git_repo), "max_count": 1}),
        dispatch("time__get_current_time", {"timezone": "Europe/Paris"}),
        text("done"),
    )
    events: list[ev.Event] = []
    second = build(cfg, events)
    try:
        assert pids("mcp_server") == []  # both listings came from the cache
        resumed = second.load_session(saved)
        assert resumed.state[DeferralState].expansion == {"mcp:time": None}
        await resumed.run("thanks")
        assert group_loads(events) == [] and pids("mcp_server") == []
        await resumed.run("last commit, and the time in Paris?")
    finally:
        await second.aclose()
    log_, paris = tool_results(resumed)[-2:]
    assert "first commit" in log_.content and '"timezone":"Europe/Paris"' in paris.content
    assert group_loads(events) == ["mcp:git", "mcp:time"]  # each loaded when first needed
    hashes = prefix_hashes(first_events) + prefix_hashes(events)
    assert len(hashes) == 3 + 4 and len(set(hashes)) == 1
    reference = first.model.requests[0]
    for request in [*first.model.requests, *second.model.requests]:
        assert request.tools == reference.tools and request.system == reference.system


def test_the_cli_resumes_a_session_without_reloading_until_a_tool_is_needed(
    tmp_path: Path, all_stopped: Callable[[str], bool], no_leftovers: None
) -> None:
    cfg = write_config(tmp_path, time_server())
    session, trace = tmp_path / "session.json", tmp_path / "trace.jsonl"

    def run(message: str, *turns: dict[str, Any]) -> list[dict[str, Any]]:
        write_script(tmp_path, *turns)
        trace.unlink(missing_ok=True)
        result = runner.invoke(app, ["run", str(cfg), message, "--session", str(session), "--trace", str(trace), "-q"])
        assert result.exit_code == 0, result.output
        assert all_stopped("mcp_server_time"), "a server outlived the command"
        return [json.loads(line) for line in trace.read_text().splitlines()]

    def saved_expansion() -> dict[str, Any]:
        return dict(json.loads(session.read_text())["state"][DEFERRAL_KEY]["expansion"])

    first = run(
        "time in Tokyo?", load("mcp:time"), dispatch("time__get_current_time", {"timezone": "Asia/Tokyo"}), text("ok")
    )
    assert [r["group"] for r in first if r["kind"] == "group_load"] == ["mcp:time"]
    assert saved_expansion() == {"mcp:time": None}

    second = run("thanks", text("You're welcome."))
    assert [r for r in second if r["kind"] == "group_load"] == []  # loaded before, not re-run
    assert saved_expansion() == {"mcp:time": None}

    third = run("and in Paris?", dispatch("time__get_current_time", {"timezone": "Europe/Paris"}), text("ok"))
    assert [r["group"] for r in third if r["kind"] == "group_load"] == ["mcp:time"]
    (result,) = [r for r in third if r["kind"] == "tool_result"]
    assert not result["is_error"]

    hashes = {r["prefix_hash"] for r in first + second + third if r["kind"] == "request"}
    assert len(hashes) == 1
    assert json.loads(session.read_text())["runs"] == 3


def test_cli_inspect_shows_the_group_and_stops_the_server_it_listed(
    tmp_path: Path, all_stopped: Callable[[str], bool], no_leftovers: None
) -> None:
    cfg = write_config(tmp_path, time_server())
    write_script(tmp_path, text("unused"))
    result = runner.invoke(app, ["inspect", str(cfg), "--json"])
    assert result.exit_code == 0, result.output
    assert all_stopped("mcp_server_time"), "inspect left the server it listed running"
    modes = {t["name"]: (t["mode"], t["reason"]) for t in json.loads(result.output)["tools"]}
    assert modes["time__get_current_time"] == ("deferred", "group mcp:time")
    assert modes["load_tools"][0] == "plugin"  # sent, and not counted as an agent tool


async def test_inject_adds_a_loaded_mcp_tool_to_the_tools_array(tmp_path: Path, no_leftovers: None) -> None:
    cfg = write_config(tmp_path, time_server(), strategy="inject")
    write_script(
        tmp_path,
        load("mcp:time", ["time__get_current_time"]),
        {"tool_calls": [{"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}]},
        text("ok"),
    )
    rt = build(cfg)
    try:
        session = rt.session()
        await session.run("time?")
    finally:
        await rt.aclose()
    before, after, _ = rt.model.requests
    assert [t.name for t in before.tools] == ["read_result", "ToolSearch", "load_tools"]
    assert [t.name for t in after.tools] == ["read_result", "time__get_current_time", "ToolSearch", "load_tools"]
    assert after.tools[1].parameters["required"] == ["timezone"]  # the server's real schema
    loaded, called = tool_results(session)
    body = json.loads(loaded.content)
    assert body["tool_names"] == ["time__get_current_time"] and body["remaining"] == 1
    assert "schemas" not in body  # inject: the schema arrives in the tools array instead
    assert not called.is_error and '"timezone":"UTC"' in called.content


# ----------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("table", "path", "message"),
    [
        (
            'name = "both"\ncommand = "x"\nurl = "http://127.0.0.1:9/mcp"\n',
            "tools.mcp[1].url",
            "server 'both' sets both 'command' (stdio) and 'url' (HTTP); keep one",
        ),
        ('name = "neither"\n', "tools.mcp[1]", "server 'neither' needs 'command' (a stdio server) or 'url'"),
        ('name = "time"\ncommand = "x"\n', "tools.mcp[1].name", "another MCP server is already named 'time'"),
        ('name = ""\ncommand = "x"\n', "tools.mcp[1].name", "must not be empty"),
        (
            'name = "socket"\nurl = "ws://127.0.0.1:9/mcp"\n',
            "tools.mcp[1].url",
            "server 'socket': url 'ws://127.0.0.1:9/mcp': WebSocket servers are not supported",
        ),
        (
            'name = "path"\nurl = "/mcp"\n',
            "tools.mcp[1].url",
            "server 'path': url '/mcp' must be an http:// or https:// URL with a host",
        ),
        (
            'name = "local"\ncommand = "x"\noauth = {}\n',
            "tools.mcp[1].oauth",
            "server 'local': oauth signs in to an HTTP server ('url')",
        ),
    ],
    ids=["both", "neither", "duplicate", "empty-name", "websocket", "path-only", "oauth-stdio"],
)
def test_server_tables_are_checked_before_anything_starts(
    tmp_path: Path, gr_home: Path, table: str, path: str, message: str, no_leftovers: None
) -> None:
    cfg = write_config(tmp_path, time_server() + "\n[[tools.mcp]]\n" + table)
    with pytest.raises(ConfigError) as info:
        build_runtime(cfg)
    assert info.value.path == path and info.value.file == str(cfg)
    assert message in info.value.message
    for command in (["config", "check", str(cfg)], ["run", str(cfg), "hi"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert f"{cfg}: {path}: {message}" in " ".join(result.output.split())
    assert not (gr_home / "mcp-cache").exists()  # no server was ever listed


def test_every_bad_server_is_reported_at_once(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, '[[tools.mcp]]\nname = "a"\n\n[[tools.mcp]]\nname = "a"\nurl = "http://h/mcp"\n')
    with pytest.raises(ConfigError) as info:
        build_runtime(cfg)
    assert isinstance(info.value, ConfigErrors)
    assert [e.path for e in info.value.errors] == ["tools.mcp[0]", "tools.mcp[1].name"]


def test_without_the_mcp_extra_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_leftovers: None
) -> None:
    monkeypatch.setitem(sys.modules, "greenroom.mcp", None)  # as if the SDK were missing
    cfg = write_config(tmp_path, time_server())
    with pytest.raises(ConfigError) as info:
        build_runtime(cfg)
    assert info.value.path == "tools.mcp" and info.value.file == str(cfg)
    assert "pip install 'greenroom[mcp]'" in info.value.message


def test_servers_started_while_building_stop_when_the_build_fails(tmp_path: Path, no_leftovers: None) -> None:
    cfg = write_config(tmp_path, time_server(start="eager"))
    cfg.write_text(cfg.read_text().replace('"scripted:script.jsonl"', '"nosuch:model"'))
    with pytest.raises(ConfigError) as info:
        build_runtime(cfg)
    assert info.value.path == "agent.model"  # no_leftovers: the eager server was stopped


async def test_eager_servers_give_normal_tools_and_bare_names_yield_to_python_tools(
    tmp_path: Path, pids: Callable[[str], list[int]], no_leftovers: None
) -> None:
    (tmp_path / "local.py").write_text(
        'def get_current_time(timezone: str) -> str:\n    """The local clock."""\n    return "local " + timezone\n'
    )
    cfg = write_config(
        tmp_path,
        time_server(naming="bare", defer=False, start="eager"),
        strategy=None,
        extra='[tools]\npython = ["local.py:get_current_time"]\n\n',
    )
    write_script(
        tmp_path,
        {
            "tool_calls": [
                {"name": "get_current_time", "arguments": {"timezone": "UTC"}},
                {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}},
                {
                    "name": "convert_time",
                    "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                },
            ]
        },
        text("ok"),
    )
    rt = build(cfg)
    try:
        assert len(pids("mcp_server_time")) == 1  # start = "eager": up before the first request
        assert rt.groups == {}
        session = rt.session()
        await session.run("time?")
    finally:
        await rt.aclose()
    names = [t.name for t in rt.model.requests[0].tools]
    assert names == ["get_current_time", "time__get_current_time", "convert_time", "read_result"]
    local, remote, converted = tool_results(session)
    assert local.content == "local UTC"
    assert '"timezone":"UTC"' in remote.content and "21:00:00+09:00" in converted.content


# ----------------------------------------------------------------------------- the docs


def test_the_documented_config_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    from greenroom.compose.build import load_runtime_config, plugin_configs

    monkeypatch.setenv("GITHUB_TOKEN", "ghp-example-token")
    cfg, records = load_runtime_config(HERE / "deferred_servers.toml")
    plugin_configs(cfg, records)  # the deferred-tools section is checked too
    servers = {s.name: s for s in cfg.tools.mcp}
    assert list(servers) == ["git", "github", "time"]
    assert servers["github"].env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp-example-token"}
    assert servers["git"].defer is True and servers["time"].always_load is True


def test_the_documented_python_example_runs(no_leftovers: None, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("example_toolset", HERE / "example_toolset.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    answer = anyio.run(module.main)
    assert json.loads(answer)["timezone"] == "UTC"
    assert "mcp:time ['time__get_current_time', 'time__convert_time']" in capsys.readouterr().out
