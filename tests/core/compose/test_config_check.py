"""``greenroom config check`` checks everything ``greenroom run`` checks, without calling
a model or starting a server: each broken config fails both the same way (exit 2, the
file and the dotted key path, no traceback); ``--connect`` also starts servers and opens
stores, then closes them."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from greenroom.cli import app
from greenroom.compose.check import check_config
from greenroom.compose.findings import Level
from greenroom.config import ConfigError, McpServerConfig, load_config

runner = CliRunner()

TOOLS_PY = (
    "from greenroom import tool\n\n@tool\ndef ping() -> str:\n    '''Ping.'''\n    return 'pong'\n\nTOOLS = [ping]\n"
)
GOOD_TOOL = '{"name": "lookup", "description": "Look up.", "parameters": {"type": "object"}}\n'
SCRIPT = '{"text": "done"}\n'
MCP_BOTH = '[[tools.mcp]]\nname = "x"\ncommand = "x"\nurl = "http://127.0.0.1:9/mcp"\n'
MCP_TWICE = '[[tools.mcp]]\nname = "x"\ncommand = "x"\n[[tools.mcp]]\nname = "x"\ncommand = "y"\n'
PRIORS = "[plugins.priors-persistence]\n"

# id -> (agent.toml, other files, the dotted path ("" for the file itself), what the message says)
BROKEN: dict[str, tuple[str | bytes, dict[str, str | bytes], str, str]] = {
    "not-utf8": (b'[agent]\nid = "caf\xe9"\n', {}, "", "not UTF-8 text: byte 0xe9 at line 3, column 10"),
    "not-toml": ("[agent\n", {}, "", "not valid TOML"),
    "api-key-in-file": ('[model]\napi_key = "sk-do-not-print"\n', {}, "model.api_key", "api_key_env"),
    "store-a-plain-path": (PRIORS + 'store = "just a path"\n', {}, "plugins.priors-persistence.store", "store URL"),
    "store-sqlite-no-file": (PRIORS + 'store = "sqlite://"\n', {}, "plugins.priors-persistence.store", "file path"),
    "priors-smoothing": (PRIORS + "min_smoothing = 2\n", {}, "plugins.priors-persistence.min_smoothing", "2"),
    "tool-timeout-zero": ("[agent]\ntool_timeout = 0\n", {}, "agent.tool_timeout", "expected a number > 0"),
    "tool-timeout-negative": ("[agent]\ntool_timeout = -5\n", {}, "agent.tool_timeout", "expected a number > 0"),
    "mcp-timeout-zero": (
        '[[tools.mcp]]\nname = "t"\ncommand = "t"\ntimeout = 0\n',
        {},
        "tools.mcp[0].timeout",
        "expected a number > 0",
    ),
    "mcp-connect-timeout-negative": (
        '[[tools.mcp]]\nname = "t"\ncommand = "t"\nconnect_timeout = -1\n',
        {},
        "tools.mcp[0].connect_timeout",
        "expected a number > 0",
    ),
    "model-timeout-zero": ("[model]\ntimeout = 0\n", {}, "model.timeout", "expected a number > 0"),
    "max-steps-negative": ("[agent]\nmax_steps = -1\n", {}, "agent.max_steps", "expected an integer >= 1"),
    "max-concurrency-zero": ("[agent]\nmax_concurrency = 0\n", {}, "agent.max_concurrency", "expected an integer >= 1"),
    "wrong-type": ('[agent]\nmax_steps = "many"\n', {}, "agent.max_steps", "expected an integer, got string"),
    "unknown-agent-key": ("[agent]\nmax_step = 3\n", {}, "agent.max_step", "unknown key 'max_step'"),
    "unknown-plugin-key": (
        "[plugins.deferred-tools]\nstrategy_ = 1\n",
        {},
        "plugins.deferred-tools.strategy_",
        "unknown key",
    ),
    "unknown-plugin": ('[plugins]\nenable = ["ghost"]\n', {}, "plugins.enable[0]", "unknown plugin 'ghost'"),
    "env-var-missing": (
        '[agent]\nid = "${GREENROOM_TEST_UNSET_VARIABLE}"\n',
        {},
        "agent.id",
        "GREENROOM_TEST_UNSET_VARIABLE is not set",
    ),
    "extends-missing": ('extends = "gone.toml"\n', {}, "extends", "extends 'gone.toml', which does not exist"),
    "extends-cycle": ('extends = "b.toml"\n', {"b.toml": 'extends = "agent.toml"\n'}, "extends", "cycle"),
    "catalog-missing": ('[tools]\ncatalogs = ["gone.jsonl"]\n', {}, "tools.catalogs[0]", "catalog file not found"),
    "catalog-bad-json-line": (
        '[tools]\ncatalogs = ["c.jsonl"]\n',
        {"c.jsonl": GOOD_TOOL + "{not json\n"},
        "tools.catalogs[0]",
        "c.jsonl:2: not valid JSON",
    ),
    "catalog-entry-without-name": (
        '[tools]\ncatalogs = ["c.jsonl"]\n',
        {"c.jsonl": '{"description": "nameless"}\n'},
        "tools.catalogs[0]",
        "'name' must be a non-empty string",
    ),
    "tool-module-missing": (
        '[tools]\npython = ["greenroom_no_such_module:TOOLS"]\n',
        {},
        "tools.python[0]",
        "cannot import greenroom_no_such_module",
    ),
    "tool-attribute-missing": (
        '[tools]\npython = ["tools.py:NOPE"]\n',
        {"tools.py": TOOLS_PY},
        "tools.python[0]",
        "has no attribute 'NOPE'",
    ),
    "tool-module-raises": (
        '[tools]\npython = ["boom.py:TOOLS"]\n',
        {"boom.py": "raise RuntimeError('no database here')\n"},
        "tools.python[0]",
        "RuntimeError: no database here",
    ),
    "two-tools-one-name": (
        '[tools]\npython = ["tools.py:TOOLS", "tools.py:TOOLS"]\n',
        {"tools.py": TOOLS_PY},
        "tools",
        "two tools are named 'ping'",
    ),
    "group-loader-missing": (
        '[[tools.groups]]\nid = "billing"\nloader = "greenroom_no_such_module:load"\n',
        {},
        "tools.groups[0]",
        "cannot import greenroom_no_such_module",
    ),
    "group-catalog-missing": (
        '[[tools.groups]]\nid = "billing"\nloader = "tools.py:TOOLS"\ncatalog = "gone.jsonl"\n',
        {"tools.py": TOOLS_PY},
        "tools.groups[0]",
        "catalog file not found",
    ),
    "unknown-provider": ('[agent]\nmodel = "nosuch:model"\n', {}, "agent.model", "unknown model provider 'nosuch'"),
    "script-missing": ('[agent]\nmodel = "scripted:gone.jsonl"\n', {}, "agent.model", "script file not found"),
    "bad-model-option": (
        '[agent]\nmodel = "openai:gpt-4o-mini"\n[model]\ntemprature = 0.2\n',
        {},
        "model.temprature",
        "unknown option(s) for the openai provider: temprature",
    ),
    "bad-model-option-value": (
        '[agent]\nmodel = "openai:gpt-4o-mini"\n[model]\napi = "chat2"\n',
        {},
        "model.api",
        'expected "chat" or "responses"',
    ),
    "mcp-command-and-url": (MCP_BOTH, {}, "tools.mcp[0].url", "sets both 'command' (stdio) and 'url' (HTTP)"),
    "mcp-neither": ('[[tools.mcp]]\nname = "x"\n', {}, "tools.mcp[0]", "needs 'command'"),
    "mcp-duplicate-name": (MCP_TWICE, {}, "tools.mcp[1].name", "another MCP server is already named 'x'"),
}


def lay_out(tmp_path: Path, text: str | bytes, files: dict[str, str | bytes]) -> Path:
    cfg = tmp_path / "agent.toml"
    body = text if isinstance(text, bytes) else text.encode()
    if b"model =" not in body and not body.startswith(b"extends") and b"[agent\n" not in body:
        body = b'[agent]\nmodel = "scripted:script.jsonl"\n' + body.replace(b"[agent]\n", b"")
    cfg.write_bytes(body)
    (tmp_path / "script.jsonl").write_text(SCRIPT)
    for name, content in files.items():
        target = tmp_path / name
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return cfg


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, " ".join(result.output.split())  # rich wraps long lines


@pytest.mark.parametrize(("text", "files", "path", "says"), list(BROKEN.values()), ids=list(BROKEN))
def test_a_broken_config_fails_check_and_run_alike(
    tmp_path: Path, text: str | bytes, files: dict[str, str | bytes], path: str, says: str
) -> None:
    cfg = lay_out(tmp_path, text, files)
    where = f"{cfg}: {path}: " if path else f"{cfg}: "
    code, checked = cli("config", "check", str(cfg))
    assert code == 2, checked
    assert f"error: {where}" in checked and says in checked, checked
    assert "ok " not in checked
    code, ran = cli("run", str(cfg), "hi", "-q")
    assert code == 2, ran
    assert where in ran and says in ran, ran
    assert "sk-do-not-print" not in checked + ran  # a key written in the file is never quoted


def test_a_good_config_checks_ok_with_what_it_built(tmp_path: Path) -> None:
    cfg = lay_out(
        tmp_path,
        '[tools]\npython = ["tools.py:TOOLS"]\ncatalogs = ["c.jsonl"]\n'
        '[[tools.groups]]\nid = "billing"\nloader = "tools.py:TOOLS"\n',
        {"tools.py": TOOLS_PY, "c.jsonl": GOOD_TOOL},
    )
    code, out = cli("config", "check", str(cfg))
    assert code == 0, out
    assert out.startswith(f"ok {cfg} (1 file(s), plugins: ") and "2 tool(s), 1 group(s)" in out
    assert "error" not in out and "warning" not in out


def test_errors_in_a_base_config_name_the_base_file(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "base.toml").write_text('[tools]\ncatalogs = ["gone.jsonl"]\n')
    (team / "broken.toml").write_bytes(b'[agent]\nsystem_prompt = "\xff"\n')
    cfg = lay_out(tmp_path, 'extends = ["team/base.toml"]\n[agent]\nmodel = "scripted:script.jsonl"\n', {})
    code, out = cli("config", "check", str(cfg))
    assert code == 2 and f"{(team / 'base.toml').resolve()}: tools.catalogs[0]: " in out, out
    cfg.write_text('extends = ["team/broken.toml"]\n')
    code, out = cli("config", "check", str(cfg))
    assert code == 2 and f"{(team / 'broken.toml').resolve()}: not UTF-8 text: byte 0xff at line 2" in out, out


def test_one_check_reports_the_errors_of_every_stage(tmp_path: Path) -> None:
    """A run stops at the first stage that fails; a check goes on and reports them all."""
    cfg = lay_out(
        tmp_path,
        '[agent]\nmodel = "nosuch:model"\n'
        '[tools]\npython = ["greenroom_no_such_module:T", "tools.py:NOPE"]\ncatalogs = ["gone.jsonl"]\n'
        '[[tools.groups]]\nid = "g"\nloader = "greenroom_no_such_module:load"\n',
        {"tools.py": TOOLS_PY},
    )
    report = check_config(cfg)
    errors = report.findings.at(Level.ERROR)
    assert [e.path for e in errors] == [
        "tools.python[0]",
        "tools.python[1]",
        "tools.catalogs[0]",
        "tools.groups[0]",
        "agent.model",
    ]
    assert all(e.file == str(cfg) for e in errors) and report.exit_code == 2
    code, ran = cli("run", str(cfg), "hi")
    assert code == 2 and "tools.python[1]" in ran and "agent.model" not in ran  # the first stage


BAD_SCHEMAS = {
    "unknown-type": ({"type": "object", "properties": {"q": {"type": "strng"}}}, "unknown type 'strng'"),
    "bad-regex": ({"type": "object", "properties": {"q": {"type": "string", "pattern": "(["}}}, "regular expression"),
    "dangling-ref": ({"type": "object", "properties": {"q": {"$ref": "#/$defs/gone"}}}, "points to nothing"),
    "meta-schema": ({"type": "object", "properties": {"q": {"type": "string", "format": 3}}}, "format"),
}


@pytest.mark.parametrize(("schema", "says"), list(BAD_SCHEMAS.values()), ids=list(BAD_SCHEMAS))
def test_every_tool_schema_is_validated(tmp_path: Path, schema: dict[str, object], says: str) -> None:
    bad = json.dumps({"name": "broken", "description": "Broken.", "parameters": schema})
    cfg = lay_out(
        tmp_path,
        '[tools]\ncatalogs = ["c.jsonl"]\n[[tools.groups]]\nid = "g"\nloader = "tools.py:TOOLS"\ncatalog = "g.jsonl"\n',
        {"c.jsonl": GOOD_TOOL + bad + "\n", "g.jsonl": bad + "\n", "tools.py": TOOLS_PY},
    )
    code, out = cli("config", "check", str(cfg))
    assert code == 2, out
    for where in ("tools.catalogs[0]", "tools.groups[0]"):
        assert f"error: {cfg}: {where}: tool 'broken' has an invalid parameters schema: #/" in out, out
    assert says in out and "'lookup'" not in out


def test_a_python_tool_with_a_bad_schema_is_an_error_at_its_reference(tmp_path: Path) -> None:
    module = (
        "from greenroom import ToolDescriptor\n"
        "from greenroom.tools import CatalogTool\n"
        "TOOLS = [CatalogTool(ToolDescriptor('odd', 'Odd.', parameters={'type': 'objekt'}), 'here')]\n"
    )
    cfg = lay_out(tmp_path, '[tools]\npython = ["odd.py:TOOLS"]\n', {"odd.py": module})
    code, out = cli("config", "check", str(cfg))
    assert code == 2 and f"{cfg}: tools.python[0]: tool 'odd' has an invalid parameters schema: #/type" in out, out


def mcp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("GREENROOM_HOME", str(home))  # listing caches of this test only
    return home


def test_mcp_servers_are_not_started_a_missing_cache_is_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from greenroom.mcp.cache import write_cached_listing
    from greenroom.mcp.listing import McpListing, McpToolSpec

    home = mcp_home(tmp_path, monkeypatch)
    marker = tmp_path / "started"
    server = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('x')"
    cfg = lay_out(
        tmp_path,
        f'[[tools.mcp]]\nname = "cold"\ncommand = "{sys.executable}"\nargs = ["-c", "{server}"]\n'
        '[[tools.mcp]]\nname = "warm"\nurl = "http://127.0.0.1:9/mcp"\n',
        {},
    )
    listed = (
        McpToolSpec("fine", "Fine.", {"type": "object"}),
        McpToolSpec("odd", "Odd.", {"type": "object", "properties": {"q": {"type": "strng"}}}),
    )
    write_cached_listing(McpServerConfig(name="warm", url="http://127.0.0.1:9/mcp"), tmp_path, McpListing(listed))
    code, out = cli("config", "check", str(cfg))
    assert code == 0, out
    assert f"note: {cfg}: tools.mcp[0]: server 'cold' has no cached listing yet: it will be started at first use" in out
    assert f"warning: {cfg}: tools.mcp[1]: server 'warm': tool 'odd' has an invalid parameters schema: #/" in out
    assert "'fine'" not in out and "tools.mcp[1]: server 'warm' has no cached" not in out
    assert not marker.exists()  # nothing was started
    assert len(list((home / "mcp-cache").iterdir())) == 1  # and nothing listed


def test_connect_starts_every_server_and_closes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp_server_time", reason="needs mcp-server-time")
    home = mcp_home(tmp_path, monkeypatch)
    cfg = lay_out(
        tmp_path,
        f'[[tools.mcp]]\nname = "time"\ncommand = "{sys.executable}"\nargs = ["-m", "mcp_server_time"]\n'
        '[[tools.mcp]]\nname = "gone"\ncommand = "greenroom-test-no-such-command"\n',
        {},
    )
    code, out = cli("config", "check", str(cfg), "--connect")
    assert code == 1, out  # the config is fine; one server is out of reach
    assert f"unreachable: {cfg}: tools.mcp[1]: " in out and "greenroom-test-no-such-command" in out, out
    assert "tools.mcp[0]" not in out
    assert len(list((home / "mcp-cache").glob("*.jsonl"))) == 1  # 'time' was listed (and cached)
    assert len(list((home / "mcp-cache").glob("*.skills.json"))) == 1  # and asked for its skills
    assert not children_running("mcp_server_time")  # and stopped: the check closed it


def children_running(marker: str) -> list[int]:
    """Live child processes of this process whose command line contains ``marker``
    (closing a server waits for its process, so none may be left when a check returns)."""
    me, out = str(os.getpid()), []
    for entry in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # "pid (comm) state ppid ...": comm may hold spaces
        if fields[1] == me and fields[0] != "Z" and marker in cmdline:
            out.append(int(entry))
    return out


def test_connect_opens_stores_through_the_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mcp_home(tmp_path, monkeypatch)
    store = tmp_path / "priors.sqlite3"
    cfg = lay_out(tmp_path, f'{PRIORS}store = "sqlite://{store}"\n', {})
    assert cli("config", "check", str(cfg), "--connect")[0] == 0
    store.write_bytes(b"not a database" * 100)
    code, out = cli("config", "check", str(cfg))
    assert code == 0, out  # a plain check opens no store
    code, out = cli("config", "check", str(cfg), "--connect")
    assert code == 1 and f"unreachable: {cfg}: plugins.priors-persistence: " in out and str(store) in out, out
    assert store.read_bytes() == b"not a database" * 100  # and never rewrites one
    cfg.write_text(cfg.read_text().replace(f"sqlite://{store}", "nosuchscheme://db"))
    code, out = cli("config", "check", str(cfg))  # a scheme no plugin provides: wrong without connecting
    assert code == 2 and f"error: {cfg}: plugins.priors-persistence.store: " in out, out
    code, out = cli("config", "check", str(cfg), "--connect")
    assert code == 2, out
    assert f"unreachable: {cfg}: plugins.priors-persistence: greenroom_run_start: " in out
    assert "no profile store handles nosuchscheme:// URLs" in out
    cfg.write_text(cfg.read_text() + 'on_store_error = "raise"\n')
    code, out = cli("config", "check", str(cfg), "--connect")
    assert code == 2 and f"unreachable: {cfg}: plugins.priors-persistence: " in out, out


def test_no_model_is_ever_called(tmp_path: Path) -> None:
    called = tmp_path / "called"
    policy = f"import pathlib\ndef plan(request):\n    pathlib.Path({str(called)!r}).write_text('x')\n    return 'hi'\n"
    cfg = lay_out(tmp_path, '[agent]\nmodel = "scripted:policy.py:plan"\n', {"policy.py": policy})
    assert cli("config", "check", str(cfg))[0] == 0
    assert cli("config", "check", str(cfg), "--connect")[0] == 0
    assert not called.exists()
    assert cli("run", str(cfg), "hi", "-q")[0] == 0 and called.exists()  # the same config runs


def test_what_this_machine_lacks_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is fine; run needs an extra or a key here: check says so and passes."""
    cfg = lay_out(tmp_path, '[agent]\nmodel = "openai:gpt-4o-mini"\n[model]\napi_key_env = "GREENROOM_TEST_KEY"\n', {})
    monkeypatch.delenv("GREENROOM_TEST_KEY", raising=False)
    if importlib.util.find_spec("openai") is not None:
        code, out = cli("config", "check", str(cfg))
        assert code == 0 and f"warning: {cfg}: agent.model: run needs it here: " in out, out
        assert "GREENROOM_TEST_KEY is not set" in out
        monkeypatch.setenv("GREENROOM_TEST_KEY", "sk-test")
        code, out = cli("config", "check", str(cfg))
        assert code == 0 and "warning" not in out, out
    monkeypatch.setitem(sys.modules, "openai", None)  # as if the extra were not installed
    code, out = cli("config", "check", str(cfg))
    assert code == 0 and f"warning: {cfg}: agent.model: run needs it here: " in out, out
    assert "pip install 'greenroom[openai]'" in out
    code, out = cli("run", str(cfg), "hi")
    assert code == 2 and f"{cfg}: agent.model: " in out and "pip install 'greenroom[openai]'" in out


@settings(max_examples=50, deadline=None)
@given(
    head=st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r"), max_size=30),
    bad=st.sampled_from([b"\xff", b"\xc3", b"\xe9t\xe9", b"\xed\xa0\x80", b"\x80abc"]),
)
def test_any_file_that_is_not_utf8_is_a_config_error_naming_it(
    tmp_path_factory: pytest.TempPathFactory, head: str, bad: bytes
) -> None:
    path = tmp_path_factory.mktemp("enc") / "agent.toml"
    prefix = f"# {head}\n".encode()
    path.write_bytes(prefix + b'[agent]\nid = "' + bad + b'"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    line = prefix.count(b"\n") + 2
    assert info.value.file == str(path.resolve()) and f"at line {line}, column" in info.value.message
    assert path.read_bytes().startswith(prefix)  # never modified
