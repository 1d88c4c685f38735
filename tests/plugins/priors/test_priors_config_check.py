"""``greenroom config check`` refuses a store URL whose scheme no plugin provides (issue 23,
item 4), without opening anything: exit 2, at the file and the key that set it, naming
the schemes that exist. Any scheme a plugin provides, built-in or contributed, passes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner

from greenroom import Plugin, hookimpl
from greenroom.cli import app
from greenroom.compose.check import check_config
from greenroom.compose.findings import Level
from greenroom.plugins.discovery import PluginRecord, discover
from greenroom_priors import MemoryStore, StoreFactory

runner = CliRunner()
BUILTIN = "memory, postgres, postgresql, sqlite"


def config(tmp_path: Path, store: str, name: str = "agent.toml") -> Path:
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n')
    cfg = tmp_path / name
    cfg.write_text(f'[agent]\nmodel = "scripted:script.jsonl"\n[plugins.priors-persistence]\nstore = "{store}"\n')
    return cfg


def check(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["config", "check", *args], env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output, result.output
    return result.exit_code, " ".join(result.output.split())  # rich wraps long lines


def test_an_unknown_scheme_fails_the_check_naming_key_file_and_schemes(tmp_path: Path) -> None:
    cfg = config(tmp_path, "redis://cache:6379/0")
    code, out = check(str(cfg))
    assert code == 2, out
    assert f"error: {cfg}: plugins.priors-persistence.store: " in out, out
    assert "'redis'" in out and f"(schemes: {BUILTIN})" in out, out
    assert "ok " not in out


def test_the_file_named_is_the_one_that_set_the_store(tmp_path: Path) -> None:
    base = config(tmp_path, "mongodb://db/agents", name="base.toml")
    cfg = tmp_path / "agent.toml"
    cfg.write_text('extends = "base.toml"\n[agent]\nid = "support"\n')
    code, out = check(str(cfg))
    assert code == 2 and f"error: {base}: plugins.priors-persistence.store: " in out, out


@pytest.mark.parametrize(
    "store",
    ["memory://shelf", "sqlite://relative/priors.sqlite3", "postgresql://agents@db.invalid/agents", "POSTGRES://h/d"],
)
def test_a_scheme_a_plugin_provides_passes_without_opening_it(tmp_path: Path, store: str) -> None:
    code, out = check(str(config(tmp_path, store)))
    assert code == 0, out
    assert out.startswith("ok ") and "error" not in out
    assert not (tmp_path / "relative").exists()  # nothing was opened or created


class Shelf(Plugin):
    """A third-party store plugin: the scheme it contributes counts like a built-in one."""

    name = "shelf-store"

    @hookimpl
    def greenroom_profile_stores(self) -> Mapping[str, StoreFactory]:
        return {"shelf": MemoryStore.from_url}


class BrokenShelf(Plugin):
    name = "broken-shelf"

    @hookimpl
    def greenroom_profile_stores(self) -> Mapping[str, StoreFactory]:
        raise RuntimeError("the shelf fell over")


def with_plugin(plugin: type[Plugin]) -> list[PluginRecord]:
    return [*discover(), PluginRecord(plugin.name, "shelf-dist", "2.0", f"{plugin.name} = shelf:X", cls=plugin)]


def test_a_scheme_a_store_plugin_contributes_passes_and_is_listed(tmp_path: Path) -> None:
    assert check_config(config(tmp_path, "shelf://top"), records=with_plugin(Shelf)).exit_code == 0
    report = check_config(config(tmp_path, "redis://x"), records=with_plugin(Shelf))
    [found] = report.findings.at(Level.ERROR)
    assert found.path == "plugins.priors-persistence.store"
    assert "(schemes: memory, postgres, postgresql, shelf, sqlite)" in found.message  # sorted


def test_a_store_plugin_that_fails_is_named_and_the_check_goes_on(tmp_path: Path) -> None:
    cfg = config(tmp_path, "memory://shelf")
    report = check_config(cfg, records=with_plugin(BrokenShelf))
    [found] = report.findings.at(Level.ERROR)
    named = "plugin 'broken-shelf' (distribution shelf-dist 2.0) failed in hook greenroom_profile_stores"
    assert named in found.message
    assert "RuntimeError: the shelf fell over" in found.message and found.file == str(cfg)
    assert "priors-persistence" in report.plugins  # the check was finished, not stopped
