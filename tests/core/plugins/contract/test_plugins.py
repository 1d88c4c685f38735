"""Discovery, selection and the plugin host, with real pip-installed distributions."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from greenroom import Plugin, hookimpl
from greenroom.plugins.checks import FailureKind
from greenroom.plugins.discovery import (
    AUTOLOAD_ENV,
    PluginHookError,
    PluginRecord,
    PluginStartError,
    Status,
    discover,
    make_plugin_host,
    select_enabled,
)
from greenroom.providers.scripted import ScriptedModel

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("on_path")]

CLI = Callable[..., subprocess.CompletedProcess[str]]


def test_installed_plugin_is_discovered_with_its_distribution() -> None:
    records = {r.name: r for r in discover()}
    example = records["example"]
    assert example.cls is not None and example.distribution == "greenroom-example-plugin"
    assert example.version == "1.2.3"
    assert "greenroom_before_inference" in example.hooks()
    # first-party plugins come through the very same entry-point group
    assert records["scripted"].distribution == "greenroom"


def test_import_error_names_distribution_and_entry_point() -> None:
    broken = {r.name: r for r in discover()}["broken-import"]
    assert broken.cls is None
    assert broken.failure is not None and broken.failure.kind is FailureKind.IMPORT
    assert "distribution greenroom-broken-plugin" in str(broken.failure)
    assert "broken-import = greenroom_broken.missing:Plugin" in str(broken.failure)
    assert "greenroom_module_that_does_not_exist" in str(broken.failure)


def test_every_broken_distribution_is_a_failed_record_of_its_kind() -> None:
    records = {r.name: r for r in discover()}
    kinds = {name: r.failure.kind for name, r in records.items() if r.failure is not None}
    assert kinds == {
        "broken-import": FailureKind.IMPORT,
        "bad-import": FailureKind.IMPORT,
        "bad-hook-arg": FailureKind.BAD_HOOK,
        "async-observer": FailureKind.BAD_HOOK,
        "bad-hook-name": FailureKind.UNKNOWN_HOOK,
        "dataclass-config": FailureKind.BAD_CONFIG_CLASS,
        "not-a-plugin": FailureKind.NOT_A_PLUGIN,
    }
    # a constructor runs only when the plugin starts: discovery cannot know it raises
    assert records["raising-ctor"].cls is not None
    assert all(r.cls is not None for r in records.values() if r.distribution == "greenroom")


def test_records_are_immutable_and_enabling_is_computed_apart() -> None:
    records = discover()
    example = next(r for r in records if r.name == "example")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        example.cls = None  # type: ignore[misc]
    with pytest.raises(ValueError, match="either a class"):
        PluginRecord("x", "d", "1", "x = m:X")  # neither a class nor a failure
    assert select_enabled(records).status["example"] is Status.OPT_IN
    assert select_enabled(records, enable=["example"]).enabled("example")
    assert select_enabled(records, disable=["scripted"]).status["scripted"] is Status.DISABLED
    assert select_enabled(records, enable=["bad-hook-arg"]).status["bad-hook-arg"] is Status.FAILED
    assert example in discover()  # discovery again gives equal records: nothing was changed


@pytest.mark.anyio
async def test_installed_plugin_hooks_fire_in_phase_order(tmp_path: Path) -> None:
    import greenroom_example

    from greenroom.compose.build import build_runtime

    cfg = tmp_path / "a.toml"
    cfg.write_text('[plugins]\nenable = ["example"]\n[plugins.example]\nnote = "hello from config"\n')
    greenroom_example.EVENTS.clear()
    rt = build_runtime(cfg, model=ScriptedModel([{"text": "hi"}]))
    await rt.session().run("x")
    assert greenroom_example.EVENTS == ["run_start", "before_inference", "after_inference", "run_end"]
    assert "hello from config (level 1)" in rt.model.requests[0].system_text


@pytest.mark.anyio
async def test_a_hook_that_raises_is_reported_by_plugin_distribution_and_hook(tmp_path: Path) -> None:
    from greenroom.compose.build import build_runtime

    cfg = tmp_path / "a.toml"
    cfg.write_text('[plugins]\nenable = ["broken-hook"]\n')
    rt = build_runtime(cfg, model=ScriptedModel([{"text": "hi"}]))
    with pytest.raises(PluginHookError) as info:
        await rt.session().run("x")
    msg = str(info.value)
    assert "plugin 'broken-hook'" in msg and "greenroom-broken-plugin 0.0.1" in msg
    assert "greenroom_before_inference" in msg and "deliberate failure" in msg


def test_disable_and_autoload_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_plugin_host().plugin("example") is None  # opt-in
    host = make_plugin_host(enable=["example"], disable=["scripted"])
    assert host.plugin("example") is not None and host.plugin("scripted") is None
    monkeypatch.setenv(AUTOLOAD_ENV, "1")
    host = make_plugin_host()
    assert host.plugin("example") is None and host.plugin("scripted") is None
    host = make_plugin_host(enable=["example"])
    assert host.plugin("example") is not None


def test_failed_plugins_stay_out_of_a_host_that_does_not_ask_for_them(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="greenroom.plugins"):
        host = make_plugin_host()
    for name in ("bad-hook-arg", "bad-hook-name", "dataclass-config", "raising-ctor"):
        assert host.plugin(name) is None
    assert host.plugin("scripted") is not None and host.plugin("deferred-tools") is not None
    # the one that fails only when started is on by default: skipped, and said so
    assert "plugin 'raising-ctor' failed to start" in caplog.text
    assert "GREENROOM_RAISING_CTOR_TOKEN is not set" in caplog.text


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("bad-hook-arg", "argument 'requst' is not one the hook passes"),
        ("raising-ctor", "the constructor raised RuntimeError"),
        ("broken-import", "ModuleNotFoundError"),
    ],
)
def test_asking_for_a_failed_plugin_raises_its_load_error(name: str, says: str) -> None:
    with pytest.raises(PluginStartError) as info:
        make_plugin_host(enable=[name])
    assert info.value.plugin == name and says in str(info.value)
    assert f"entry point '{name} = " in str(info.value)
    with pytest.raises(PluginStartError):
        make_plugin_host(configured=[name])  # a config section asks for it just the same
    assert make_plugin_host(enable=[name], disable=[name]).plugin(name) is None


def test_plugins_given_directly_are_validated_not_rejected_by_pluggy() -> None:
    class Misspelled(Plugin):
        name = "misspelled"

        @hookimpl
        def greenroom_run_start(self, ctx: Any, extra: Any) -> None: ...

    with pytest.raises(PluginStartError) as info:
        make_plugin_host(records=[], extra=[Misspelled()])
    assert "hook greenroom_run_start: argument 'extra' is not one the hook passes" in str(info.value)
    assert "Misspelled" in str(info.value)


def test_a_record_built_by_hand_that_pluggy_rejects_is_still_named() -> None:
    class Unchecked(Plugin):
        @hookimpl
        def greenroom_run_start(self, ctx: Any, when: Any) -> None: ...

    record = PluginRecord("unchecked", "hand-made", "0", "unchecked = m:Unchecked", cls=Unchecked)
    with pytest.raises(PluginStartError) as info:
        make_plugin_host(records=[record], enable=["unchecked"])
    assert info.value.failure.kind is FailureKind.BAD_HOOK and "'when'" in str(info.value)
    assert make_plugin_host(records=[record]).plugin("unchecked") is None  # on by default only: skipped


def test_config_schema_names_a_failed_plugin_and_leaves_it_out_of_the_whole_schema() -> None:
    from typer.testing import CliRunner

    from greenroom.cli import app

    runner = CliRunner()
    one = runner.invoke(app, ["config", "schema", "dataclass-config"], env={"COLUMNS": "200"})
    assert one.exit_code == 2
    assert "plugin 'dataclass-config' is installed but failed to load" in one.output
    whole = runner.invoke(app, ["config", "schema"])
    assert whole.exit_code == 0, whole.output
    sections = json.loads(whole.output)["properties"]["plugins"]["properties"]
    assert "example" in sections and "dataclass-config" not in sections
