"""A plugin that owns a top-level table of the config file (``Plugin.config_table``), the
way ``greenroom serve`` owns ``[serve]``: the table is checked when the file loads (errors
name file and dotted key), structured into the plugin's config class, and kept from every
other reading: no other plugin may claim it, core's tables cannot be taken, and the
plugin's ``[plugins.NAME]`` says where its config goes."""

from __future__ import annotations

from pathlib import Path

import anyio
import attrs
import pytest

from greenroom import ConfigError, Plugin, build_runtime, hookimpl, load_runtime_config, plugin_config
from greenroom.plugins.checks import FailureKind
from greenroom.plugins.discovery import PluginRecord, catalog_of, check_plugin_class
from greenroom.providers.scripted import ScriptedModel


@attrs.frozen
class Window:
    """Args:
    days: Days kept.
    """

    days: int = attrs.field(default=7, validator=attrs.validators.ge(1))


@attrs.frozen
class LedgerConfig:
    """Args:
    url: Where the ledger is.
    window: What it keeps.
    """

    url: str = "sqlite://ledger"
    window: Window | None = None


class LedgerPlugin(Plugin):
    """Keeps a ledger beside the runs."""

    name = "ledger-app"
    config_class = LedgerConfig
    config_table = "ledger"
    nonblocking = True
    seen: list[object] = []

    @hookimpl
    def greenroom_run_start(self, ctx: object) -> None:
        LedgerPlugin.seen.append(self.config)


def record(cls: type[Plugin], name: str | None = None) -> PluginRecord:
    name = name or cls.name
    return PluginRecord(name, "ledger-dist", "1.0", f"{name} = tests:{cls.__name__}", cls=cls)


def write(folder: Path, text: str) -> Path:
    path = folder / "agent.toml"
    path.write_text('[agent]\nmodel = "scripted:"\n' + text, encoding="utf-8")
    return path


def test_the_table_is_checked_and_structured_as_the_plugins_own(tmp_path: Path) -> None:
    path = write(tmp_path, '[ledger]\nurl = "${LEDGER_URL:-sqlite://x}"\n[ledger.window]\ndays = 30\n')
    cfg, _ = load_runtime_config(path, [record(LedgerPlugin)])
    assert plugin_config(LedgerPlugin, cfg) == LedgerConfig("sqlite://x", Window(30))
    bare, _ = load_runtime_config(write(tmp_path, ""), [record(LedgerPlugin)])
    assert plugin_config(LedgerPlugin, bare) == LedgerConfig()  # no table: the defaults


def test_a_bad_value_names_the_file_and_the_dotted_key(tmp_path: Path) -> None:
    path = write(tmp_path, '[ledger]\nurl = "u"\ncolour = "red"\n[ledger.window]\ndays = 0\n')
    with pytest.raises(ConfigError) as info:
        load_runtime_config(path, [record(LedgerPlugin)])
    said = str(info.value)
    assert f"{path.resolve()}: ledger.colour: unknown key 'colour'" in said
    assert f"{path.resolve()}: ledger.window.days: expected an integer >= 1, got 0" in said


def test_without_the_plugin_the_table_is_unknown(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown key 'ledger'"):
        load_runtime_config(write(tmp_path, '[ledger]\nurl = "u"\n'), [])


def test_the_plugin_section_says_where_its_config_goes(tmp_path: Path) -> None:
    path = write(tmp_path, '[plugins.ledger-app]\nurl = "u"\n')
    with pytest.raises(ConfigError, match=r"plugin 'ledger-app' reads its config from \[ledger\]"):
        load_runtime_config(path, [record(LedgerPlugin)])


def test_a_run_plugin_gets_its_table_as_its_config(tmp_path: Path) -> None:
    path = write(tmp_path, '[ledger]\nurl = "postgresql://db/ledger"\n')
    LedgerPlugin.seen.clear()
    rt = build_runtime(path, records=[record(LedgerPlugin)], model=ScriptedModel([]))
    anyio.run(rt.preview)
    assert LedgerPlugin.seen == [LedgerConfig("postgresql://db/ledger")]


def test_two_claims_of_one_table_and_a_core_table_are_refused() -> None:
    class Other(LedgerPlugin):
        name = "other-app"

    _, refused = catalog_of([("ledger-app", LedgerPlugin), ("other-app", Other)])
    said = [str(p) for p in refused[LedgerPlugin] + refused[Other]]
    assert said and all("[ledger] is claimed by the plugins ledger-app and other-app" in s for s in said)

    class Greedy(LedgerPlugin):
        config_table = "agent"

    (problem,) = check_plugin_class(Greedy, catalog_of([])[0])
    assert problem.kind is FailureKind.BAD_CONFIG_CLASS and "config_table 'agent'" in str(problem)
