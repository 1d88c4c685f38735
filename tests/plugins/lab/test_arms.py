"""The arms' configs: each overlay is a config greenroom loads, checked against the
deferred-tools and priors-persistence schemas (the keys the lab names), that extends the
config under evaluation and sets only the arm's strategy and its own priors store; a bare
catalog's base config loads from any path; ``--arms`` is read as users write it."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from greenroom import load_runtime_config
from greenroom_lab.eval.arms import ARMS, DEFAULT_ARMS, ArmError, base_config, parse_arms, write_overlays


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text('{"name": "getWeather", "description": "Get the weather", "parameters": null}\n')
    config = tmp_path / "agent.toml"
    config.write_text('[agent]\nid = "mine"\nmax_steps = 9\n\n[tools]\ncatalogs = ["tools.jsonl"]\n')
    return config


@pytest.mark.parametrize("name", list(ARMS))
def test_every_arm_loads_as_a_config_with_its_strategy_and_its_own_store(
    agent: Path, tmp_path: Path, name: str
) -> None:
    out = tmp_path / "out"
    path = write_overlays([ARMS[name]], agent, out)[name]
    cfg, _ = load_runtime_config(path)  # checked against the plugins' own schemas
    assert cfg.agent.id == "mine" and cfg.agent.max_steps == 9  # the config under evaluation, extended
    assert cfg.tools.catalogs  # its tools, from where it lives
    deferred = cfg.plugin_sections["deferred-tools"]
    arm = ARMS[name]
    if arm.strategy == "eager":
        assert deferred == {"enabled": False}
    else:
        assert deferred == {"enabled": True, "strategy": arm.strategy}
    priors = cfg.plugin_sections["priors-persistence"]
    assert priors["save"] is arm.priors  # an arm without priors never saves what it saw
    store = Path(priors["store"].removeprefix("sqlite://"))
    assert store.parent == out.resolve() and store.name == f"{arm.slug}.priors.sqlite3"


def test_arms_never_share_a_store_and_max_steps_overrides_the_config(agent: Path, tmp_path: Path) -> None:
    paths = write_overlays(parse_arms(list(ARMS)), agent, tmp_path / "out", max_steps=3)
    stores = set()
    for path in paths.values():
        cfg, _ = load_runtime_config(path)
        assert cfg.agent.max_steps == 3
        stores.add(cfg.plugin_sections["priors-persistence"]["store"])
    assert len(stores) == len(ARMS)  # an arm never reads what another learned
    assert sorted(p.name for p in paths.values()) == sorted(f"{a.slug}.toml" for a in ARMS.values())


def test_an_overlay_is_rewritten_on_every_run(agent: Path, tmp_path: Path) -> None:
    arms = parse_arms("dispatch")
    path = write_overlays(arms, agent, tmp_path / "out", max_steps=3)["dispatch"]
    path.write_text("edited by hand\n")
    write_overlays(arms, agent, tmp_path / "out")
    assert "edited" not in path.read_text() and "max_steps" not in path.read_text()


@pytest.mark.parametrize("folder", ['it "quoted"', "tab\there", "naïve ünïcode", "back\\slash"])
def test_paths_of_any_name_make_valid_configs(tmp_path: Path, folder: str) -> None:
    home = tmp_path / folder
    home.mkdir()
    catalog = home / "tools.jsonl"
    catalog.write_text('{"name": "getWeather", "description": "Get the weather", "parameters": null}\n')
    base = base_config(catalog, home / "out", model="openai:gpt-5", max_steps=7)
    data = tomllib.loads(base.read_text(encoding="utf-8"))
    assert data["tools"]["catalogs"] == [str(catalog.resolve())]
    assert data["agent"] == {"id": "eval", "max_steps": 7, "model": "openai:gpt-5"}
    path = write_overlays(parse_arms("dispatch+priors"), base, home / "out")["dispatch+priors"]
    cfg, _ = load_runtime_config(path)
    assert cfg.agent.model == "openai:gpt-5" and cfg.agent.max_steps == 7
    assert cfg.plugin_sections["priors-persistence"]["store"].startswith("sqlite://" + str(home.resolve()))


def test_a_bare_catalog_without_a_model_names_none(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text("")
    data = tomllib.loads(base_config(catalog, tmp_path / "o", model=None, max_steps=12).read_text())
    assert "model" not in data["agent"]


@pytest.mark.parametrize(
    ("given", "names"),
    [
        (None, list(DEFAULT_ARMS)),
        ("dispatch", ["dispatch"]),
        (" inject , native+priors ", ["inject", "native+priors"]),
        ("dispatch,dispatch,all-eager", ["dispatch", "all-eager"]),  # once each, in the order given
        (["all-eager,inject", "dispatch"], ["all-eager", "inject", "dispatch"]),
        ("dispatch,,", ["dispatch"]),
    ],
)
def test_arms_are_read_as_users_write_them(given: str | list[str] | None, names: list[str]) -> None:
    assert [a.name for a in parse_arms(given)] == names


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("dispatch,lazy,eagr", "--arms: no arm named 'lazy', 'eagr'; the arms are all-eager, dispatch"),
        (" , ", "--arms: name at least one arm (all-eager, dispatch"),
        ([], "--arms: name at least one arm"),
    ],
)
def test_unknown_or_no_arms_are_clear_errors(given: str | list[str], said: str) -> None:
    with pytest.raises(ArmError) as caught:
        parse_arms(given)
    assert str(caught.value).startswith(said)


def test_only_arms_with_priors_learn_one_session_after_another() -> None:
    assert {a.name for a in ARMS.values() if a.learns} == {"dispatch+priors", "inject+priors", "native+priors"}
