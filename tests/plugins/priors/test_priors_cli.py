"""``greenroom priors`` through the plugin's CLI hook: show, list, reset, export, import,
with --store and with --config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom_priors import KEY, Observation, PriorsPlugin, SqliteStore, fold_document


@pytest.fixture
def app() -> typer.Typer:
    return plugin_cli(PriorsPlugin())  # type: ignore[no-any-return]


@pytest.fixture
def seeded(tmp_path: Path) -> str:
    url = f"sqlite://{tmp_path / 'p.sqlite3'}"
    store = SqliteStore.from_url(url)
    store.update(
        "ops",
        KEY,
        lambda c: fold_document(
            c,
            Observation({"search": 0.2, "page_oncall": 1.0, "fetch": 0.5}, {"search": 1, "page_oncall": 4, "fetch": 2}),
            now="2025-01-02T03:04:05Z",
        ),
    )
    store.update("other", KEY, lambda c: fold_document(c, Observation({"x": 1.0}), now="2025-01-01T00:00:00Z"))
    store.close()
    return url


runner = CliRunner()


def test_show_sorts_by_p(app: typer.Typer, seeded: str) -> None:
    result = runner.invoke(app, ["priors", "show", "ops", "--store", seeded])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "1 session(s), 3 tool(s)" in out
    assert out.index("page_oncall") < out.index("fetch") < out.index("search")
    assert "1.0000" in out and "0.2000" in out


def test_show_json(app: typer.Typer, seeded: str) -> None:
    result = runner.invoke(app, ["priors", "show", "ops", "--json", "--store", seeded])
    data = json.loads(result.output)
    assert data["sessions"] == 1
    assert [(t["tool"], t["p"], t["calls"]) for t in data["tools"]] == [
        ("page_oncall", 1.0, 4),
        ("fetch", 0.5, 2),
        ("search", 0.2, 1),
    ]
    assert data["tools"][0]["last_used"] == "2025-01-02T03:04:05Z"
    limited = json.loads(
        runner.invoke(app, ["priors", "show", "ops", "--json", "--limit", "1", "--store", seeded]).output
    )
    assert [t["tool"] for t in limited["tools"]] == ["page_oncall"]


def test_show_unknown_agent_lists_the_known_ones(app: typer.Typer, seeded: str) -> None:
    result = runner.invoke(app, ["priors", "show", "nobody", "--store", seeded])
    assert result.exit_code == 1
    assert "no priors for agent 'nobody'" in result.output and "ops, other" in result.output


def test_list_and_reset(app: typer.Typer, seeded: str) -> None:
    assert runner.invoke(app, ["priors", "list", "--store", seeded]).output.split() == ["ops", "other"]
    aborted = runner.invoke(app, ["priors", "reset", "ops", "--store", seeded], input="n\n")
    assert aborted.exit_code == 1
    assert runner.invoke(app, ["priors", "show", "ops", "--store", seeded]).exit_code == 0
    confirmed = runner.invoke(app, ["priors", "reset", "ops", "--store", seeded], input="y\n")
    assert confirmed.exit_code == 0 and "deleted" in confirmed.output
    assert runner.invoke(app, ["priors", "show", "ops", "--store", seeded]).exit_code == 1
    again = runner.invoke(app, ["priors", "reset", "ops", "--yes", "--store", seeded])
    assert again.exit_code == 0 and "had no priors" in again.output


def test_export_then_import_into_another_agent(app: typer.Typer, seeded: str, tmp_path: Path) -> None:
    out = tmp_path / "ops.json"
    assert runner.invoke(app, ["priors", "export", "ops", str(out), "--store", seeded]).exit_code == 0
    exported = json.loads(out.read_text())
    assert exported["agent"] == "ops" and exported["tools"]["page_oncall"]["calls"] == 4
    to_stdout = runner.invoke(app, ["priors", "export", "ops", "--store", seeded])
    assert json.loads(to_stdout.output) == exported

    result = runner.invoke(app, ["priors", "import", "clone", str(out), "--store", seeded])
    assert result.exit_code == 0, result.output
    store = SqliteStore.from_url(seeded)
    clone, ops = store.read("clone", KEY), store.read("ops", KEY)
    store.close()
    assert clone is not None and ops is not None
    assert clone["tools"] == ops["tools"] and clone["sessions"] == ops["sessions"]


def test_import_refuses_a_bad_file_and_keeps_the_old_priors(app: typer.Typer, seeded: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "greenroom.priors/1", "sessions": 1, "tools": {"a": {"p": 7}}}))
    result = runner.invoke(app, ["priors", "import", "ops", str(bad), "--store", seeded])
    assert result.exit_code == 2 and "tools.a.p must be a number in [0, 1]" in result.output
    not_json = tmp_path / "x.json"
    not_json.write_text("{")
    assert "not valid JSON" in runner.invoke(app, ["priors", "import", "ops", str(not_json), "--store", seeded]).output
    kept = json.loads(runner.invoke(app, ["priors", "show", "ops", "--json", "--store", seeded]).output)
    assert [t["tool"] for t in kept["tools"]] == ["page_oncall", "fetch", "search"]


def test_store_from_config_file_relative_to_it(app: typer.Typer, tmp_path: Path) -> None:
    cfg_dir = tmp_path / "agentcfg"
    cfg_dir.mkdir()
    store = SqliteStore(cfg_dir / "state" / "learned.sqlite3")
    store.update("cfg-agent", KEY, lambda c: fold_document(c, Observation({"t": 1.0}), now="2025-01-01T00:00:00Z"))
    store.close()
    config = cfg_dir / "agent.toml"
    config.write_text(
        '[agent]\nid = "cfg-agent"\n\n[plugins.priors-persistence]\nstore = "sqlite://state/learned.sqlite3"\n'
    )
    result = runner.invoke(app, ["priors", "show", "cfg-agent", "--json", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tools"][0]["tool"] == "t"
    both = runner.invoke(app, ["priors", "show", "x", "--config", str(config), "--store", "memory://"])
    assert both.exit_code == 2 and "not both" in both.output
    # an agent's config elsewhere that extends it finds the same store: the path is
    # relative to the file that set it, for the CLI and for runs alike
    other = tmp_path / "agents" / "support"
    other.mkdir(parents=True)
    (other / "agent.toml").write_text('extends = "../../agentcfg/agent.toml"\n')
    result = runner.invoke(app, ["priors", "show", "cfg-agent", "--json", "--config", str(other / "agent.toml")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tools"][0]["tool"] == "t"

    from greenroom.compose.build import build_runtime

    rt = build_runtime(other / "agent.toml")
    plugin = rt.host.plugin("priors-persistence")
    ctx = rt.start_run().ctx
    assert plugin.store_url(ctx) == f"sqlite://{(cfg_dir / 'state' / 'learned.sqlite3').as_posix()}"  # type: ignore[arg-type]


def test_corrupt_store_is_a_clean_cli_error(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite3"
    path.write_bytes(b"garbage" * 100)
    result = runner.invoke(app, ["priors", "show", "a", "--store", f"sqlite://{path}"])
    assert result.exit_code == 2
    assert str(path) in result.output and "Traceback" not in result.output


def test_import_of_a_deeply_nested_file_is_a_clear_error(app: typer.Typer, seeded: str, tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": "greenroom.priors/1", "tools": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = runner.invoke(app, ["priors", "import", "ops", str(deep), "--store", seeded])
    assert result.exit_code == 2
    assert "deep.json: nested more than 64 levels deep" in result.output
    kept = json.loads(runner.invoke(app, ["priors", "show", "ops", "--json", "--store", seeded]).output)
    assert [t["tool"] for t in kept["tools"]] == ["page_oncall", "fetch", "search"]
