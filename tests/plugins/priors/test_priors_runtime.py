"""The plugin inside a real Runtime: load at RunStart (before other plugins), fold and
save at RunEnd, events, store selection through the hook, and degraded stores."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from priors_testutil import Events, call

from greenroom import Plugin, PluginHookError, Runtime, ToolPriors, hookimpl
from greenroom.events import PluginWarning
from greenroom_priors import KEY, MemoryStore, PriorsConfig, PriorsPlugin, SqliteStore
from greenroom_priors.events import PriorsLoaded, PriorsSaved
from greenroom_priors.store import ProfileStore, StoreError
from greenroom_priors.stores import absolutize

pytestmark = pytest.mark.anyio

SCRIPT = [call("alpha"), call("alpha", "beta"), {"text": "done"}]  # 3 steps


class Probe(Plugin):
    """Reads ctx.priors in its own RunStart, like the deferred-tools plugin does."""

    name = "probe"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[dict[str, float], int, bool, float]] = []

    @hookimpl
    def greenroom_run_start(self, ctx: Any) -> None:
        p = ctx.priors
        self.seen.append((dict(p.p), p.sessions, p.loaded, p.default))


async def test_a_run_is_folded_saved_and_loaded_by_the_next_runtime(
    build: Callable[..., Runtime], events: Events, store_url: str, agent_id: str
) -> None:
    cfg = PriorsConfig(store=store_url)
    rt = build(SCRIPT, config=cfg, agent=agent_id)
    session = rt.session()
    outcome = await session.run("hi")
    await rt.aclose()
    assert outcome.stop_reason == "final" and outcome.steps == 3

    (loaded,) = events.of(PriorsLoaded)
    assert (loaded.agent_id, loaded.tools, loaded.sessions) == (agent_id, 0, 0)
    assert loaded.source.split(":")[0] == store_url.split(":")[0]
    (saved,) = events.of(PriorsSaved)
    assert (saved.agent_id, saved.tools, saved.sessions) == (agent_id, 2, 1)
    assert session.last_snapshot is not None
    assert session.last_snapshot[ToolPriors].p == pytest.approx({"alpha": 2 / 3, "beta": 1 / 3})

    # a second runtime (another process, in real life): a plugin that reads priors in its
    # RunStart sees them, although it was registered after priors-persistence
    probe = Probe()
    rt2 = build([call("beta"), {"text": "ok"}], config=cfg, agent=agent_id, plugins=[probe])
    await rt2.session().run("again")
    await rt2.aclose()
    p, sessions, loaded_flag, _ = probe.seen[0]
    assert p == pytest.approx({"alpha": 2 / 3, "beta": 1 / 3})
    assert (sessions, loaded_flag) == (1, True)

    store = _open(store_url)
    doc = store.read(agent_id, KEY)
    store.close()
    assert doc is not None and doc["sessions"] == 2
    # alpha was there but not called: a share of 0 folded in (decay_unused, the default)
    assert doc["tools"]["alpha"]["p"] == pytest.approx(0.5 * 2 / 3)
    assert doc["tools"]["beta"]["p"] == pytest.approx(0.5 * 1 / 3 + 0.5 * 0.5)  # l = 1/2
    assert doc["tools"]["alpha"]["calls"] == 2 and doc["tools"]["beta"]["calls"] == 2
    assert doc["tools"]["beta"]["last_used"] >= doc["tools"]["alpha"]["last_used"]


def _open(url: str) -> ProfileStore:
    from greenroom_priors import open_store
    from greenroom_priors.stores import builtin_factories

    return open_store(url, builtin_factories())


async def test_every_run_of_a_session_counts_and_sees_the_last_save(
    build: Callable[..., Runtime], events: Events
) -> None:
    probe = Probe()
    rt = build(
        [call("alpha"), {"text": "1"}, call("gamma"), {"text": "2"}],
        config=PriorsConfig(store="memory://", default_prior=0.05),
        plugins=[probe],
    )
    session = rt.session()
    await session.run("one")
    await session.run("two")
    assert [s[1] for s in probe.seen] == [0, 1]
    assert probe.seen[1][0] == {"alpha": 0.5}
    assert probe.seen[0][3] == 0.05  # default_prior reaches ToolPriors.default
    assert [e.sessions for e in events.of(PriorsSaved)] == [1, 2]


async def test_save_false_loads_but_never_writes(build: Callable[..., Runtime], events: Events) -> None:
    url = "memory://readonly-test"
    MemoryStore.forget("readonly-test")
    rt = build(SCRIPT, config=PriorsConfig(store=url, save=False))
    await rt.session().run("hi")
    assert events.of(PriorsLoaded) and not events.of(PriorsSaved)
    assert MemoryStore.from_url(url).read("agent", KEY) is None


async def test_decay_unused_fades_available_tools(build: Callable[..., Runtime]) -> None:
    url = "memory://decay-test"
    MemoryStore.forget("decay-test")
    cfg = PriorsConfig(store=url, decay_unused=True)
    await build([call("alpha", "gamma"), {"text": "1"}], config=cfg).session().run("a")
    await build([call("alpha"), {"text": "2"}], config=cfg).session().run("b")
    doc = MemoryStore.from_url(url).read("agent", KEY)
    assert doc is not None
    assert doc["tools"]["alpha"]["p"] == pytest.approx(0.5)
    assert doc["tools"]["gamma"]["p"] == pytest.approx(0.25)  # 0.5 * 0.5 + 0.5 * 0


class DownStore:
    """A store whose server is unreachable."""

    url = "down://db.example:5432/priors"

    def _fail(self, *args: Any) -> Any:
        raise StoreError("down://db.example:5432/priors: connection refused")

    read = update = delete = agents = _fail

    def close(self) -> None:
        pass


class DownStores(Plugin):
    name = "down-stores"

    @hookimpl
    def greenroom_profile_stores(self) -> dict[str, Any]:
        return {"down": lambda url: DownStore()}


async def test_store_down_degrades_to_defaults_with_a_warning(
    build: Callable[..., Runtime], events: Events, caplog: pytest.LogCaptureFixture
) -> None:
    probe = Probe()
    rt = build(SCRIPT, config=PriorsConfig(store="down://db.example:5432/priors"), plugins=[DownStores(), probe])
    with caplog.at_level(logging.WARNING, logger="greenroom.priors"):
        outcome = await rt.session().run("hi")
    assert outcome.stop_reason == "final" and outcome.steps == 3
    assert probe.seen == [({}, 0, False, 0.01)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("loading tool priors" in w and "connection refused" in w for w in warnings)
    assert any("saving tool priors" in w for w in warnings)
    errors = events.of(PluginWarning)
    assert [e.hook for e in errors] == ["greenroom_run_start", "greenroom_run_end"]
    assert all(e.plugin == "priors-persistence" for e in errors)
    assert events.of(PriorsLoaded)[0].source == "defaults"
    assert not events.of(PriorsSaved)


async def test_on_store_error_raise_fails_the_run(build: Callable[..., Runtime]) -> None:
    rt = build(SCRIPT, config=PriorsConfig(store="down://x", on_store_error="raise"), plugins=[DownStores()])
    with pytest.raises(PluginHookError, match=r"priors-persistence.*connection refused"):
        await rt.session().run("hi")


async def test_an_unknown_scheme_is_reported_not_fatal(
    build: Callable[..., Runtime], events: Events, caplog: pytest.LogCaptureFixture
) -> None:
    rt = build(SCRIPT, config=PriorsConfig(store="redis://localhost/0"))
    with caplog.at_level(logging.WARNING, logger="greenroom.priors"):
        assert (await rt.session().run("hi")).stop_reason == "final"
    assert "no profile store handles redis:// URLs" in events.of(PluginWarning)[0].message
    assert "memory, postgres, postgresql, sqlite" in caplog.text


class CustomStores(Plugin):
    """A third-party store plugin that also replaces the built-in memory:// scheme."""

    name = "custom-stores"

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    @hookimpl
    def greenroom_profile_stores(self) -> dict[str, Any]:
        def factory(url: str) -> ProfileStore:
            self.opened.append(url)
            return MemoryStore()

        return {"custom": factory, "memory": factory}


async def test_third_party_stores_come_through_the_hook(build: Callable[..., Runtime], events: Events) -> None:
    custom = CustomStores()
    await build(SCRIPT, config=PriorsConfig(store="custom://x"), plugins=[custom]).session().run("hi")
    await build(SCRIPT, config=PriorsConfig(store="memory://y"), plugins=[custom]).session().run("hi")
    assert custom.opened == ["custom://x", "memory://y"]
    assert len(events.of(PriorsSaved)) == 2


async def test_default_store_is_a_sqlite_file_in_the_state_dir(
    build: Callable[..., Runtime], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path))
    rt = build(SCRIPT)
    await rt.session().run("hi")
    await rt.aclose()
    store = SqliteStore(tmp_path / "priors.sqlite3")
    doc = store.read("agent", KEY)
    store.close()
    assert doc is not None and doc["sessions"] == 1


async def test_a_runtime_closes_its_store(build: Callable[..., Runtime], sqlite_url: str) -> None:
    plugin_rt = build(SCRIPT, config=PriorsConfig(store=sqlite_url))
    await plugin_rt.session().run("hi")
    plugin: PriorsPlugin = plugin_rt.host.plugin("priors-persistence")
    assert list(plugin._stores)
    await plugin_rt.aclose()
    assert plugin._stores == {}


def test_relative_sqlite_paths_follow_the_config_folder(tmp_path: Path) -> None:
    assert (
        absolutize("sqlite://state/p.db?timeout=3", tmp_path)
        == f"sqlite://{(tmp_path / 'state' / 'p.db').as_posix()}?timeout=3"
    )
    assert absolutize("sqlite:///abs/p.db", tmp_path) == "sqlite:///abs/p.db"
    assert absolutize("memory://x", tmp_path) == "memory://x"


def test_config_schema_bounds_and_structuring() -> None:
    schema = PriorsPlugin.config_schema()
    jsonschema.validate({"store": "sqlite:///x", "min_smoothing": 0.2}, schema)
    for bad in ({"min_smoothing": 0}, {"default_prior": 1.5}, {"on_store_error": "ignore"}, {"nope": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    with pytest.raises(ValueError):
        PriorsConfig(min_smoothing=0)


def test_config_file_errors_name_the_key(tmp_path: Path) -> None:
    from greenroom.compose.build import load_runtime_config
    from greenroom.config import ConfigError

    path = tmp_path / "agent.toml"
    path.write_text('[plugins.priors-persistence]\nstore = "memory://x"\nmin_smoothing = 2\n')
    with pytest.raises(ConfigError, match=r"plugins\.priors-persistence\.min_smoothing"):
        load_runtime_config(path)


async def test_a_store_that_just_failed_is_not_retried_at_every_run_start(
    build: Callable[..., Runtime], events: Events
) -> None:
    opened: list[str] = []

    class CountingDown(Plugin):
        name = "counting-down"

        @hookimpl
        def greenroom_profile_stores(self) -> dict[str, Any]:
            def factory(url: str) -> ProfileStore:
                opened.append(url)
                raise StoreError("refused")

            return {"down": factory}

    rt = build(
        [call("alpha"), {"text": "1"}, call("alpha"), {"text": "2"}],
        config=PriorsConfig(store="down://x", save=False),
        plugins=[CountingDown()],
    )
    session = rt.session()
    await session.run("one")
    await session.run("two")
    assert opened == ["down://x"]  # the second run start did not wait on the store again
    messages = [e.message for e in events.of(PluginWarning)]
    assert len(messages) == 2 and "not retried yet" in messages[1]
    assert [e.source for e in events.of(PriorsLoaded)] == ["defaults", "defaults"]


async def test_what_sessions_use_together_and_how_long_they_are_reach_the_next_run(
    build: Callable[..., Runtime], store_url: str, agent_id: str
) -> None:
    cfg = PriorsConfig(store=store_url)
    for script in (SCRIPT, SCRIPT, [call("beta"), {"text": "ok"}]):
        rt = build(script, config=cfg, agent=agent_id)
        session = rt.session()
        await session.run("hi")
        await rt.aclose()
    assert session.last_snapshot is not None
    priors = session.last_snapshot[ToolPriors]
    # two sessions of 3 steps calling alpha and beta, one of 2 steps calling beta alone
    assert priors.sets == pytest.approx({frozenset({"alpha", "beta"}): 2 / 3, frozenset({"beta"}): 1 / 3})
    assert priors.steps == pytest.approx(8 / 3)


async def test_failed_searches_are_kept_in_the_agents_document(
    build: Callable[..., Runtime], store_url: str, agent_id: str
) -> None:
    from greenroom_deferred import DeferredConfig, DeferredToolsPlugin

    def search(query: str) -> dict[str, Any]:
        return {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": query}}]}

    # one search found alpha and alpha was called; one found nothing it used; one nothing
    script = [search("alpha"), call("alpha"), search("beta"), search("zebra crossing"), {"text": "done"}]
    cfg = PriorsConfig(store=store_url)
    for _ in range(2):
        rt = build(script, config=cfg, agent=agent_id, plugins=[DeferredToolsPlugin(DeferredConfig(enabled=True))])
        await rt.session().run("hi")
        await rt.aclose()
    store = _open(store_url)
    doc = store.read(agent_id, KEY)
    store.close()
    assert doc is not None
    failed = {e["query"]: (e["count"], e["found"]) for e in doc["failed"]}
    assert failed == {"beta": (2, ["beta"]), "zebra crossing": (2, [])}
