"""``greenroom_check_config``: a plugin checks its own part of a config during ``greenroom
config check``. What it reports is an error at the file and dotted key it concerns; a
check that raises or answers the wrong shape is an error naming the plugin, and every
other plugin's check still runs."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from greenroom import ConfigError, Plugin, Runtime, RuntimeConfig, hookimpl
from greenroom.compose.check import CheckReport, check_config
from greenroom.compose.findings import Finding, Level
from greenroom.config import ConfigErrors
from greenroom.plugins.discovery import PluginRecord, discover


@attrs.frozen
class EvenConfig:
    count: int = 2


class Even(Plugin):
    """Wants an even ``count``, and says where it is not."""

    name = "even"
    config_class = EvenConfig

    @hookimpl
    def greenroom_check_config(self, config: RuntimeConfig, runtime: Runtime) -> list[ConfigError] | None:
        assert runtime.config is config and config.files  # the config the runtime was built from
        if self.config.count % 2:
            return [ConfigError(f"expected an even number, got {self.config.count}", path="plugins.even.count")]
        return None


class Vague(Plugin):
    """Reports a problem without naming a key: it lands at its section."""

    name = "vague"

    @hookimpl
    async def greenroom_check_config(self, config: RuntimeConfig, runtime: Runtime) -> list[ConfigError]:
        return [ConfigErrors([ConfigError("first thing wrong"), ConfigError("second thing wrong")])]


class Broken(Plugin):
    name = "broken"

    @hookimpl
    def greenroom_check_config(self, config: RuntimeConfig, runtime: Runtime) -> None:
        raise RuntimeError("the checker itself is broken")


class Misshapen(Plugin):
    name = "misshapen"

    @hookimpl
    def greenroom_check_config(self, config: RuntimeConfig, runtime: Runtime) -> str:
        return "everything is fine"


def records(*plugins: type[Plugin]) -> list[PluginRecord]:
    mine = [PluginRecord(p.name, "checker-dist", "1.0", f"{p.name} = checkers:{p.__name__}", cls=p) for p in plugins]
    return [*discover(), *mine]


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n')
    cfg = tmp_path / "agent.toml"
    cfg.write_text('[agent]\nmodel = "scripted:script.jsonl"\n' + text)
    return cfg


def errors(report: CheckReport) -> list[Finding]:
    return report.findings.at(Level.ERROR)


def test_hook_greenroom_check_config(tmp_path: Path) -> None:
    """A plugin's finding is an error at its key, in the file that set the key."""
    (tmp_path / "base.toml").write_text("[plugins.even]\ncount = 3\n")
    cfg = write(tmp_path, "")
    cfg.write_text('extends = "base.toml"\n' + cfg.read_text())
    report = check_config(cfg, records=records(Even))
    assert report.exit_code == 2
    [found] = errors(report)
    assert (found.file, found.path) == (str(tmp_path / "base.toml"), "plugins.even.count")
    assert str(found) == f"{tmp_path / 'base.toml'}: plugins.even.count: expected an even number, got 3"


def test_a_config_the_plugin_accepts_checks_ok(tmp_path: Path) -> None:
    report = check_config(write(tmp_path, "[plugins.even]\ncount = 4\n"), records=records(Even))
    assert report.exit_code == 0, report.findings.items
    assert "even" in report.plugins


def test_an_error_without_a_key_is_at_the_plugins_section(tmp_path: Path) -> None:
    cfg = write(tmp_path, "")
    report = check_config(cfg, records=records(Vague))
    assert [(f.file, f.path, f.message) for f in errors(report)] == [
        (str(cfg), "plugins.vague", "first thing wrong"),
        (str(cfg), "plugins.vague", "second thing wrong"),
    ]


@pytest.mark.parametrize("bad", [Broken, Misshapen])
def test_a_check_that_fails_names_the_plugin_and_the_others_still_run(tmp_path: Path, bad: type[Plugin]) -> None:
    cfg = write(tmp_path, "[plugins.even]\ncount = 5\n")
    report = check_config(cfg, records=records(bad, Even, Vague))  # no traceback: a report
    assert report.exit_code == 2
    failed = [f for f in errors(report) if f.path == f"plugins.{bad.name}"]
    assert len(failed) == 1, report.findings.items
    assert failed[0].file == str(cfg)
    assert failed[0].message.startswith(
        f"plugin {bad.name!r} (distribution checker-dist 1.0) failed in hook greenroom_check_config: "
    )
    expected = "the checker itself is broken" if bad is Broken else "expected an iterable of ConfigError"
    assert expected in failed[0].message
    # the other plugins were still asked, and the check went on to the end
    assert {f.path for f in errors(report)} >= {"plugins.even.count", "plugins.vague"}
    assert {"even", "vague", bad.name} <= set(report.plugins)
