"""Ways a run could end without a word or without its session: a tool module that calls
``sys.exit`` on import is a named config error (file, dotted key, reference), a session
path that is a symbolic link is written through (the link stays a link), and a live view
whose terminal went away stops printing without ending the run."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from greenroom import events as ev
from greenroom._support.storage import write_json_atomic
from greenroom.cli import app
from greenroom.cli.live import LiveView
from greenroom.compose.sources import import_ref
from greenroom.config import ConfigError

ENV = {"COLUMNS": "300", "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1"}
runner = CliRunner()


def agent(folder: Path, python: str, turns: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    cfg = folder / "agent.toml"
    cfg.write_text(
        f'[agent]\nid = "a"\nmodel = "scripted:turns.jsonl"\n'
        f"[tools]\npython = [{python}]\n"
        '[plugins]\nenable = ["scripted"]\n'
    )
    return cfg


OK_TOOLS = '''
from greenroom import tool


@tool
def ping() -> str:
    """Answers pong."""
    return "pong"


TOOLS = [ping]
'''


# ---------------------------------------------------------------- sys.exit on import


@pytest.mark.parametrize(("code", "shown"), [("", "sys.exit()"), ("0", "sys.exit(0)"), ("'bye'", "sys.exit('bye')")])
def test_a_tool_file_that_exits_on_import_is_a_named_config_error(tmp_path: Path, code: str, shown: str) -> None:
    (tmp_path / "fine.py").write_text(OK_TOOLS)
    (tmp_path / "exits.py").write_text(f"import sys\nsys.exit({code})\n")
    cfg = agent(tmp_path, '"fine.py:TOOLS", "exits.py:TOOLS"', [{"text": "never"}])
    result = runner.invoke(app, ["run", str(cfg), "hi"], env=ENV)
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())  # the console may wrap the line
    assert f"{cfg}: tools.python[1]: 'exits.py:TOOLS': importing exits.py called {shown}" in message
    assert "never" not in result.stdout


def test_a_tool_package_module_that_exits_on_import_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "exiting_tools_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("raise SystemExit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"'exiting_tools_pkg.mod:TOOLS': importing exiting_tools_pkg.mod called"):
        import_ref("exiting_tools_pkg.mod:TOOLS")
    assert "exiting_tools_pkg.mod" not in sys.modules  # a half-run module is not kept


def test_a_tool_file_that_exits_is_not_kept_half_run(tmp_path: Path) -> None:
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(1)\n")
    for _ in range(2):  # the second import runs the module again, it does not find a half-run one
        with pytest.raises(ConfigError, match=r"called sys.exit\(1\)"):
            import_ref("exits.py:TOOLS", tmp_path)


def test_config_check_names_a_tool_module_that_exits(tmp_path: Path) -> None:
    (tmp_path / "exits.py").write_text("import sys\nsys.exit()\n")
    cfg = agent(tmp_path, '"exits.py:TOOLS"', [{"text": "never"}])
    result = runner.invoke(app, ["config", "check", str(cfg)], env=ENV)
    assert result.exit_code != 0, result.output
    assert "called sys.exit()" in " ".join(result.output.split())


# ---------------------------------------------------------------- symlinked session


def test_writing_through_a_symlink_updates_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    target = tmp_path / "real" / "data.json"
    target.parent.mkdir()
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert write_json_atomic(link, {"a": 1}) == link
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in target.parent.iterdir()] == ["data.json"]  # no temporary left


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real" / "new.json"
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_json_atomic(link, [1])
    assert link.is_symlink()
    assert json.loads(target.read_text()) == [1]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_run_saves_a_symlinked_session_through_the_link(tmp_path: Path) -> None:
    (tmp_path / "fine.py").write_text(OK_TOOLS)
    cfg = agent(tmp_path, '"fine.py:TOOLS"', [{"text": "answer"}])
    shared = tmp_path / "shared" / "s.json"
    link = tmp_path / "s.json"
    link.symlink_to(os.path.relpath(shared, link.parent))  # relative, as users make them
    for text in ("one", "two"):
        result = runner.invoke(app, ["run", str(cfg), text, "--session", str(link), "-q"], env=ENV)
        assert result.exit_code == 0, result.output
    assert link.is_symlink()
    doc = json.loads(shared.read_text())
    assert doc["runs"] == 2
    assert [m["content"] for m in doc["messages"]] == ["one", "answer", "two", "answer"]


# ---------------------------------------------------------------- a terminal that went away


class HungUp:
    """A terminal after SIGHUP: every write fails with EIO."""

    def __init__(self) -> None:
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        raise OSError(5, "Input/output error")

    def flush(self) -> None:
        raise OSError(5, "Input/output error")

    def isatty(self) -> bool:
        return False


def test_a_live_view_whose_terminal_hung_up_goes_quiet_without_raising() -> None:
    out = HungUp()
    view = LiveView(Console(file=out, width=80))  # type: ignore[arg-type]
    answer = ev.ResponseReceived(text="the answer")
    assert answer.describe()  # an event the view prints
    view(answer)
    assert view.gone and out.writes >= 1
    tried = out.writes
    view(answer)
    assert out.writes == tried  # not tried again
