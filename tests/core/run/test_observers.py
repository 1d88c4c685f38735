"""An observer (a plugin implementing ``greenroom_event``) sees every event, from the
first one a runtime emits while it is built: a tool whose schema is invalid is reported
by name and the rest of the tools work, observer or not, through ``abuild_runtime``,
``greenroom inspect``, ``config check`` and ``run``. An observer that raises costs
nothing but one masked line per run naming the plugin, its distribution and the hook."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.gr_testutil import env_with_path
from typer.testing import CliRunner

from greenroom import Plugin, hookimpl
from greenroom import events as ev
from greenroom.cli import app
from greenroom.compose.build import abuild_runtime

HERE = Path(__file__).resolve().parents[1]
SECRET_SERVER = HERE / "mcp" / "secret_echo_server.py"
TOKEN = "tok-3f9a8b7c6d5e4f30"

TOOLS_PY = textwrap.dedent('''
    from greenroom import tool
    from greenroom.tools import FunctionTool, ToolDescriptor

    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    BAD = {"type": "object", "properties": {"q": {"type": "strng"}}}
    TOOLS = [ping, FunctionTool(lambda **kw: "ran", ToolDescriptor("bad_py", "A tool with a bad schema.", BAD))]
''')
CATALOG = [
    {"name": "bad_cat", "description": "Bad.", "parameters": {"properties": {"q": {"pattern": "[a-"}}}},
    {"name": "fine", "description": "A fine tool.", "parameters": {"type": "object"}},
]
BAD_TOOLS = {"bad_py", "bad_cat"}
TURNS = [
    {"tool_calls": [{"name": "ping", "arguments": {}}, {"name": "bad_py", "arguments": {"q": "x"}}]},
    {"text": "done"},
]

# the observer as an installed distribution: what the command line discovers
WATCH_PY = textwrap.dedent("""
    import json, os
    from greenroom import Plugin, hookimpl

    class Watch(Plugin):
        name = "watch"

        @hookimpl
        def greenroom_event(self, ctx, event):
            with open(os.environ["WATCH_LOG"], "a") as log:
                log.write(json.dumps([ctx and ctx.run_id, event.kind, getattr(event, "tool", "")]) + "\\n")
            if os.environ.get("WATCH_QUOTES"):
                raise RuntimeError("the collector refused the token " + os.environ["WATCH_QUOTES"])
""")


class Observer(Plugin):
    name = "observer"

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.seen: list[tuple[str | None, str, str]] = []

    @hookimpl
    def greenroom_event(self, ctx: Any, event: ev.Event) -> None:
        self.seen.append((ctx and ctx.run_id, event.kind, getattr(event, "tool", "")))


def agent(folder: Path, plugins: tuple[str, ...] = (), extra: str = "") -> Path:
    (folder / "tools.py").write_text(TOOLS_PY)
    (folder / "catalog.jsonl").write_text("".join(json.dumps(t) + "\n" for t in CATALOG))
    (folder / "script.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TURNS))
    cfg = folder / "agent.toml"
    enable = json.dumps(["scripted", *plugins])
    cfg.write_text(
        '[agent]\nmodel = "scripted:script.jsonl"\n'
        '[tools]\npython = ["tools.py:TOOLS"]\ncatalogs = ["catalog.jsonl"]\n'
        f"[plugins]\nenable = {enable}\n" + extra
    )
    return cfg


@pytest.fixture(autouse=True)
def only_what_is_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREENROOM_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture
def watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The ``watch`` observer installed (distribution ``greenroom-watch-test 0.1``); the
    events it saw are in the file this returns."""
    site = tmp_path / "site"
    info = site / "greenroom_watch_test-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "greenroom_watch_test.py").write_text(WATCH_PY)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: greenroom-watch-test\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[greenroom.plugins]\nwatch = greenroom_watch_test:Watch\n")
    monkeypatch.syspath_prepend(str(site))
    log = tmp_path / "watched.jsonl"
    monkeypatch.setenv("WATCH_LOG", str(log))
    return log


def cli(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "300", **(env or {})})
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return done.exit_code, done.output


def watched(log: Path) -> list[tuple[str | None, str, str]]:
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]  # type: ignore[misc]


# ---------------------------------------------------------------- building, observed


@pytest.mark.anyio
async def test_abuild_runtime_with_an_observer_reports_each_bad_tool_and_the_rest_work(tmp_path: Path) -> None:
    observer = Observer()
    heard: list[ev.Event] = []
    bus = ev.EventBus()
    bus.subscribe(heard.append)
    rt = await abuild_runtime(agent(tmp_path), extra_plugins=[observer], events=bus)
    try:
        # reported as the tools loaded, before any run: to the listeners and to the observer
        assert {e.tool for e in heard if isinstance(e, ev.ToolUnusable)} == BAD_TOOLS
        assert {(run, tool) for run, kind, tool in observer.seen if kind == "tool_unusable"} == {
            (None, "bad_py"),
            (None, "bad_cat"),
        }
        assert set(rt.tools.unusable) == BAD_TOOLS
        session = rt.session()
        outcome = await session.run("go")
        assert (outcome.stop_reason, outcome.text) == ("final", "done")
        results = {m.name: m for m in session.messages if m.role == "tool"}
        assert results["ping"].content == "pong" and not results["ping"].is_error
        assert results["bad_py"].is_error and "tool 'bad_py' cannot be used" in results["bad_py"].content
        kinds = [kind for run, kind, _ in observer.seen if run == outcome.run_id]
        assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    finally:
        await rt.aclose()


def test_inspect_check_and_run_with_an_observer_name_the_bad_tools_and_go_on(tmp_path: Path, watch: Path) -> None:
    cfg = agent(tmp_path, plugins=("watch",))

    code, out = cli("inspect", cfg, "--json")
    assert code == 0, out
    rows = {t["name"]: t for t in json.loads(out)["tools"]}
    assert {n for n, t in rows.items() if t["mode"] == "unusable"} == BAD_TOOLS
    assert rows["bad_cat"]["reason"].startswith("invalid parameter schema: #/properties/q/pattern: '[a-'")
    assert rows["ping"]["mode"] == rows["fine"]["mode"] == "eager"
    code, out = cli("inspect", cfg)
    assert code == 0 and "bad_py" in out and "2 unusable (invalid schema, never sent)" in out, out

    code, out = cli("config", "check", cfg)
    said = " ".join(out.split())  # rich wraps long lines
    assert code == 2 and "Error" not in said.replace("error:", ""), out  # the check's own errors, no crash
    assert "tools.python[0]: tool 'bad_py' has an invalid parameters schema" in said
    assert "tools.catalogs[0]: tool 'bad_cat' has an invalid parameters schema" in said

    code, out = cli("run", cfg, "go")
    assert code == 0 and out.rstrip().endswith("answer: done"), out
    assert "tool bad_cat is unusable" in out and "tool bad_py is unusable" in out
    # the observer saw them too, outside any run, then every event of the run
    assert {(run, tool) for run, kind, tool in watched(watch) if kind == "tool_unusable"} >= {
        (None, "bad_py"),
        (None, "bad_cat"),
    }
    assert watched(watch)[-1][1] == "run_end"


# ---------------------------------------------------------------- an observer that fails


@pytest.mark.slow
def test_an_observer_that_raises_is_one_masked_line_per_run(tmp_path: Path, watch: Path) -> None:
    # the token is an MCP server's env value: a secret the run masks wherever it shows
    server = (
        f'[[tools.mcp]]\nname = "sec"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = [{json.dumps(str(SECRET_SERVER))}]\nenv = {{ API_TOKEN = "{TOKEN}" }}\n'
    )
    cfg = agent(tmp_path, plugins=("watch",), extra=server)
    trace = tmp_path / "trace.jsonl"
    # a process of its own: what its log and its live view print is what a user sees
    env = env_with_path(tmp_path / "site", WATCH_QUOTES=TOKEN, COLUMNS="300")
    done = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "run", str(cfg), "go", "--trace", str(trace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0 and done.stdout.rstrip().endswith("answer: done"), out
    assert "Traceback" not in out and TOKEN not in out, out
    named = "plugin 'watch' (distribution greenroom-watch-test 0.1) failed in hook greenroom_event"
    reports = [line for line in out.splitlines() if "greenroom_event" in line]
    # once for the events outside any run (the tools found unusable), once for the run
    assert reports == [f"{named}: RuntimeError: the collector refused the token ***"] * 2, out
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    errors = [r for r in records if r["kind"] == "error"]
    assert [(r["plugin"], r["distribution"], r["hook"]) for r in errors] == [
        ("watch", "greenroom-watch-test 0.1", "greenroom_event")
    ] * 2
    assert TOKEN not in trace.read_text() and records[-1]["stop_reason"] == "final"
    # the observer was called with every event all the same
    assert [kind for _, kind, _ in watched(watch)][-1] == "run_end"


class Failing(Plugin):
    name = "failing"

    @hookimpl
    def greenroom_event(self, ctx: Any, event: ev.Event) -> None:
        if event.kind == "run_end":
            raise KeyError("no exporter for run_end")
        raise ValueError("collector unreachable")


def test_a_failing_observer_is_reported_once_per_run_and_way_of_failing(make_runtime: Any) -> None:
    observer = Observer()
    turns = [{"tool_calls": [{"name": "nope", "arguments": {}}]}, {"text": "one"}, {"text": "two"}]
    rt = make_runtime(turns, plugins=[Failing(), observer])
    heard: list[ev.Event] = []
    rt.events.subscribe(heard.append)
    session = rt.session()
    first = anyio.run(session.run, "go")
    second = anyio.run(session.run, "again")
    errors = [e for e in heard if isinstance(e, ev.PluginError)]
    assert [(e.plugin, e.hook, e.message) for e in errors] == [
        ("failing", "greenroom_event", "ValueError: collector unreachable"),
        ("failing", "greenroom_event", "KeyError: 'no exporter for run_end'"),
    ] * 2
    # every other observer saw every event of both runs, the runs ended as ever
    assert (first.stop_reason, second.stop_reason) == ("final", "final")
    assert [kind for _, kind, _ in observer.seen].count("run_end") == 2
    assert len(observer.seen) == len(heard) - len(errors)  # the reports went to the listeners only
