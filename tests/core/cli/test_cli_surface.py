"""The command line starts with what the command needs: a core command loads no plugin, and
the top-level help lists the plugins' commands from what the last real load recorded, the
same as a real load shows, until anything that could change them changes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from greenroom.cli import surface

# runs ``greenroom ARGS`` in a fresh process, then says how it exited and which of the
# plugin machinery (discovery, any first-party plugin) it imported
PROBE = textwrap.dedent(
    """
    import sys
    from greenroom.cli import main
    code = 0
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    watched = ("greenroom.plugins", "greenroom_deferred", "greenroom_ranking", "greenroom_priors", "greenroom_demo")
    print("LOADED:", *sorted(m for m in watched if m in sys.modules))
    print("CODE:", code)
    """
)


def greenroom(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # a working folder of its own: it is on sys.path, and one that changes is a new environment
    cwd = home / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "GREENROOM_HOME": str(home / "home"), "COLUMNS": "120", **env},
        timeout=120,
    )
    body, code = out.stdout.rsplit("CODE:", 1)
    return subprocess.CompletedProcess(out.args, int(code), body, out.stderr)


def loaded(out: subprocess.CompletedProcess[str]) -> list[str]:
    return str(out.stdout).rsplit("LOADED:", 1)[1].split()


def shown(out: subprocess.CompletedProcess[str]) -> str:
    return str(out.stdout).rsplit("LOADED:", 1)[0]


def test_help_lists_the_plugins_commands_without_loading_a_plugin_once_recorded(tmp_path: Path) -> None:
    first = greenroom(tmp_path, "--help")
    assert first.returncode == 0, first.stderr
    assert "greenroom.plugins" in loaded(first)  # nothing recorded yet: a real load
    assert "greenroom_ranking" in loaded(first)
    assert "rank" in first.stdout and "priors" in first.stdout  # the first-party plugins' groups
    # a source file edited in between (a checkout being worked on) rightly means a real
    # load again, which records anew: the next run lists from the record
    for _ in range(3):
        second = greenroom(tmp_path, "--help")
        if not loaded(second):
            break
    assert second.returncode == 0, second.stderr
    assert loaded(second) == []
    assert shown(second) == shown(first) and second.stderr == first.stderr


def test_a_core_command_loads_no_plugin(tmp_path: Path) -> None:
    out = greenroom(tmp_path, "config", "--help")
    assert out.returncode == 0, out.stderr
    assert "Usage: greenroom config" in out.stdout
    assert loaded(out) == []


def test_a_plugin_command_loads_the_plugins_for_real(tmp_path: Path) -> None:
    greenroom(tmp_path, "--help")  # recorded: running a plugin's command must not use it
    out = greenroom(tmp_path, "rank", "--help")
    assert out.returncode == 0, out.stderr
    assert "Usage: greenroom rank" in out.stdout and "greenroom.plugins" in loaded(out)


def test_an_unknown_command_is_suggested_the_plugins_commands(tmp_path: Path) -> None:
    out = greenroom(tmp_path, "rnak")
    assert out.returncode == 2
    assert "No such command 'rnak'" in out.stderr and "'rank'" in out.stderr


# ------------------------------------------------------------------ the record itself


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _root() -> typer.Typer:
    root = typer.Typer(name="greenroom", no_args_is_help=True, add_completion=False)

    @root.command("core")
    def core() -> None:
        """A core command."""

    return root


def _plugin_source(folder: Path, name: str, help_text: str) -> None:
    (folder / f"{name}.py").write_text(
        textwrap.dedent(
            f'''
            import typer

            def add(app: typer.Typer) -> None:
                sub = typer.Typer(help={help_text!r})

                @sub.command("go")
                def go() -> None:
                    """Go."""

                app.add_typer(sub, name="tools", rich_help_panel="Extras")

                @app.command("hidden-one", hidden=True)
                def hidden_one() -> None:
                    """Not listed."""

                @app.command("one")
                def one(count: int = 1) -> None:
                    """One command.

                    Longer text that the listing does not show."""
            '''
        )
    )


def _load_from(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record what the plugin module ``name`` adds, and check its stand-ins list the same."""
    folder.mkdir(exist_ok=True)
    _plugin_source(folder, name, "Tools.")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, name, raising=False)

    def load(target: typer.Typer) -> list[str]:
        __import__(name).add(target)
        return ["plugin 'x' failed in hook greenroom_cli_commands: boom"]

    real = _root()
    commands, warnings = surface.record(real, load, {"core"})
    assert warnings == ["plugin 'x' failed in hook greenroom_cli_commands: boom"]
    listed = _root()
    surface.add_listed(listed, commands)
    shown = [CliRunner().invoke(app, ["--help"], env={"COLUMNS": "120"}).output for app in (real, listed)]
    assert shown[0] == shown[1] and "tools" in shown[0] and "hidden-one" not in shown[0]
    return warnings


def test_listed_stand_ins_show_what_the_real_commands_show(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings = _load_from(tmp_path / "src", "gr_cli_plugin_a", monkeypatch)
    known = surface.cached()
    assert known is not None and known[1] == warnings
    assert [c["name"] for c in known[0]] == ["hidden-one", "one", "tools"]


def test_an_edited_source_file_or_a_changed_setting_invalidates_the_record(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _load_from(tmp_path / "src", "gr_cli_plugin_b", monkeypatch)
    assert surface.cached() is not None
    monkeypatch.setenv("GREENROOM_SOMETHING", "1")  # plugins read GREENROOM_* settings
    assert surface.cached() is None
    monkeypatch.delenv("GREENROOM_SOMETHING")
    assert surface.cached() is not None
    _plugin_source(tmp_path / "src", "gr_cli_plugin_b", "Tools, renamed.")
    assert surface.cached() is None


def test_a_broken_cache_file_is_a_miss_and_is_rewritten(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home.mkdir()
    surface.cache_path().write_text("{not json")
    assert surface.cached() is None
    _load_from(tmp_path / "src", "gr_cli_plugin_c", monkeypatch)
    assert surface.cached() is not None
    assert oct(surface.cache_path().stat().st_mode & 0o777) == "0o600"
