"""Config composition: extends, env interpolation, schemas, and errors with dotted paths."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from greenroom.config import ConfigError, load_config
from greenroom.plugins.discovery import Plugin


@attrs.frozen
class Rule:
    tool: str
    mode: str


@attrs.frozen
class DemoConfig:
    """Options.

    Args:
        rules: Ordered rules.
        limit: A limit.
    """

    rules: tuple[Rule, ...] = ()
    limit: int = 5


class DemoPlugin(Plugin):
    name = "demo-plugin"
    config_class = DemoConfig

    @classmethod
    def config_schema(cls) -> dict:
        schema = super().config_schema()
        schema["properties"]["rules"]["items"]["properties"]["mode"]["enum"] = ["eager", "deferred"]
        return schema


SCHEMAS = {"demo-plugin": DemoPlugin.config_schema()}


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def errors_of(path: Path, **kw) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, plugin_schemas=SCHEMAS, **kw)
    return str(info.value)


def test_extends_merges_tables_and_replaces_lists(tmp_path) -> None:
    write(
        tmp_path / "base.toml",
        '[agent]\nid = "base"\nmax_steps = 7\n[tools]\npython = ["a:b", "c:d"]\n'
        '[plugins.demo-plugin]\nlimit = 3\nrules = [{tool = "x", mode = "eager"}]\n',
    )
    sub = tmp_path / "team"
    sub.mkdir()
    child = write(sub / "agent.toml", 'extends = "../base.toml"\n[agent]\nid = "child"\n[tools]\npython = ["e:f"]\n')
    cfg = load_config(child, plugin_schemas=SCHEMAS)
    assert cfg.agent.id == "child" and cfg.agent.max_steps == 7
    assert cfg.tools.python == ("e:f",)
    assert cfg.plugin_sections["demo-plugin"]["limit"] == 3
    assert cfg.origin("agent.max_steps") == str((tmp_path / "base.toml").resolve())
    assert cfg.origin("agent.id") == str(child.resolve())


def test_errors_name_the_file_that_set_the_value(tmp_path) -> None:
    base = write(
        tmp_path / "base.toml",
        '[plugins.demo-plugin]\nrules = [{tool = "a", mode = "eager"}, {tool = "b", mode = "eager"},'
        ' {tool = "c", mode = "sometimes"}]\n',
    )
    child = write(tmp_path / "child.toml", 'extends = "base.toml"\n[agent]\nid = "x"\n')
    msg = errors_of(child)
    assert msg.startswith(f"{base.resolve()}: plugins.demo-plugin.rules[2].mode: expected one of 'eager', 'deferred'")


def test_unknown_keys_wrong_types_and_unknown_plugins(tmp_path) -> None:
    f = write(
        tmp_path / "a.toml",
        '[agent]\nid = "x"\nmax_step = 3\nmax_steps = "many"\n'
        '[plugins.demo-plugin]\nlimt = 2\n[plugins.nope]\nx = 1\n[plugins]\ndisable = ["ghost"]\n',
    )
    msg = errors_of(f)
    assert "agent.max_step: unknown key 'max_step'" in msg
    assert "agent.max_steps: expected an integer, got string 'many'" in msg
    assert "plugins.demo-plugin.limt: unknown key 'limt'" in msg
    assert "plugins.nope: unknown plugin 'nope'" in msg
    assert "plugins.disable[0]: unknown plugin 'ghost'" in msg


def test_env_interpolation_and_missing_variables(tmp_path) -> None:
    text = '[agent]\nsystem_prompt = "${GR_TEST_KEY}"\nid = "${GR_TEST_ID:-x}"\n[model]\nbase = "${GR_TEST_BASE}"\n'
    f = write(tmp_path / "a.toml", text)
    cfg = load_config(f, env={"GR_TEST_KEY": "sekret"})
    assert (cfg.agent.system_prompt, cfg.agent.id) == ("sekret", "x")
    assert "agent.system_prompt: environment variable GR_TEST_KEY is not set" in errors_of(f, env={})
    # [model] is read when the model is built (a gateway never builds it): kept as written
    assert cfg.model == {"base": "${GR_TEST_BASE}"}


def test_bad_toml_missing_base_and_cycles(tmp_path) -> None:
    assert "not valid TOML" in errors_of(write(tmp_path / "bad.toml", "[agent\n"))
    assert "extends 'gone.toml', which does not exist" in errors_of(
        write(tmp_path / "m.toml", 'extends = "gone.toml"\n')
    )
    write(tmp_path / "x.toml", 'extends = "y.toml"\n')
    assert "extends forms a cycle" in errors_of(write(tmp_path / "y.toml", 'extends = "x.toml"\n'))


def test_plugin_sections_structure_into_frozen_config(tmp_path) -> None:
    from greenroom.config import structure_plugin_config

    f = write(tmp_path / "a.toml", '[plugins.demo-plugin]\nrules = [{tool = "a*", mode = "eager"}]\n')
    cfg = load_config(f, plugin_schemas=SCHEMAS)
    conf = structure_plugin_config("demo-plugin", DemoConfig, cfg.plugin_sections["demo-plugin"], cfg.origins)
    assert conf == DemoConfig(rules=(Rule("a*", "eager"),), limit=5)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        conf.limit = 1  # type: ignore[misc]


def test_a_rejected_model_option_is_reported_at_its_own_key(tmp_path, monkeypatch) -> None:
    from greenroom.compose.build import build_runtime

    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "agent.toml").write_text('[agent]\nmodel = "openai:gpt-4o-mini"\n[model]\ntimeout = 0\n')
    with pytest.raises(ConfigError) as info:
        build_runtime(tmp_path / "agent.toml")
    assert info.value.path == "model.timeout"
    assert str(info.value).startswith(f"{tmp_path / 'agent.toml'}: model.timeout: expected a number")


def test_paths_resolve_against_the_file_that_set_them(tmp_path) -> None:
    """A team's base config keeps working when an agent's config elsewhere extends it."""
    from greenroom.compose.build import build_runtime

    base = tmp_path / "team"
    base.mkdir()
    (base / "tools.py").write_text(
        "from greenroom import tool\n\n"
        "@tool\ndef ping() -> str:\n    '''Ping.'''\n    return 'pong'\n\n"
        "TOOLS = [ping]\n"
    )
    (base / "plan.py").write_text("def plan(request):\n    return {'text': 'done'}\n")
    (base / "base.toml").write_text('[agent]\nmodel = "scripted:plan.py:plan"\n[tools]\npython = ["tools.py:TOOLS"]\n')
    agent = tmp_path / "agents" / "support"
    agent.mkdir(parents=True)
    (agent / "agent.toml").write_text('extends = "../../team/base.toml"\n[agent]\nid = "support"\n')
    rt = build_runtime(agent / "agent.toml")
    assert "ping" in rt.user_tool_names and rt.agent.id == "support"
