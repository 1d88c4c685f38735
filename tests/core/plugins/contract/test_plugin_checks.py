"""The load-time checks of a plugin class, without installing anything: hooks against the
specs, wrapper options, plugin-declared hookspecs and the config class."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Generator
from typing import Any

import attrs
import pluggy
import pytest

import greenroom.hookspecs as core_hookspecs
from greenroom import Plugin, hookimpl, hookspec
from greenroom.plugins.checks import (
    FailureKind,
    add_hookspecs,
    check_config_class,
    check_hooks,
    check_plugin_class,
)
from greenroom.plugins.discovery import PluginRecord, PluginStartError, core_catalog, discover, make_plugin_host


def problems_of(cls: type) -> list[tuple[FailureKind, str | None, str]]:
    return [(p.kind, p.hook, p.detail) for p in check_plugin_class(cls, core_catalog())]


def test_a_correct_plugin_passes_and_registers() -> None:
    class Good(Plugin):
        name = "good"

        @hookimpl
        def greenroom_before_inference(self, ctx: Any, request: Any) -> None: ...

        @hookimpl(tryfirst=True)
        async def greenroom_run_end(self, outcome: Any) -> None: ...  # a subset of the arguments is fine

        @hookimpl(wrapper=True)
        def greenroom_after_inference(self, ctx: Any) -> Generator[None, Any, Any]:
            return (yield)

        @hookimpl(hookwrapper=True)
        def greenroom_run_start(self) -> Generator[None, Any, None]:
            yield

        @hookimpl
        @staticmethod
        def greenroom_model_providers() -> dict[str, Any]:
            return {}

        def helper(self, requst: Any) -> None:
            """Not a hook: not checked."""

    assert problems_of(Good) == []
    host = make_plugin_host(records=[PluginRecord("good", "d", "1", "good = m:Good", cls=Good)])
    assert host.plugin("good") is not None


def test_an_argument_the_spec_lacks_names_the_hook_and_the_nearest_argument() -> None:
    class P(Plugin):
        @hookimpl
        def greenroom_before_inference(self, ctx: Any, requst: Any) -> None: ...

    ((kind, hook, detail),) = problems_of(P)
    assert kind is FailureKind.BAD_HOOK and hook == "greenroom_before_inference"
    assert detail == "argument 'requst' is not one the hook passes (it passes: ctx, request); did you mean 'request'?"


def test_an_argument_with_a_default_or_keyword_only_would_never_receive_a_value() -> None:
    class P(Plugin):
        @hookimpl
        def greenroom_run_start(self, ctx: Any, verbose: bool = False) -> None: ...

        @hookimpl
        def greenroom_run_end(self, ctx: Any, *, outcome: Any) -> None: ...

    details = [d for _, _, d in problems_of(P)]
    assert "argument 'verbose' is not one the hook passes (it passes: ctx)" in details
    assert "argument 'outcome' is keyword-only, but hook arguments are passed by position" in details


def test_an_unknown_hook_name_suggests_the_nearest_spec() -> None:
    class P(Plugin):
        @hookimpl
        def greenroom_befor_inference(self, ctx: Any, request: Any) -> None: ...

        @hookimpl(specname="greenroom_nothing_like_it")
        def named(self) -> None: ...

        @hookimpl(optionalhook=True)
        def greenroom_maybe_later(self) -> None: ...  # optional: may name a hook nobody declares

    assert problems_of(P) == [
        (
            FailureKind.UNKNOWN_HOOK,
            "greenroom_befor_inference",
            "no such hook is declared (did you mean greenroom_before_inference?)",
        ),
        (FailureKind.UNKNOWN_HOOK, "greenroom_nothing_like_it", "no such hook is declared"),
    ]


def test_specname_is_checked_against_the_hook_it_names() -> None:
    class P(Plugin):
        @hookimpl(specname="greenroom_run_start")
        def starting(self, ctx: Any, when: Any) -> None: ...

    ((kind, hook, _),) = problems_of(P)
    assert kind is FailureKind.BAD_HOOK and hook == "greenroom_run_start"


@pytest.mark.parametrize(
    ("opts", "body", "says"),
    [
        ({"wrapper": True}, "plain", "wrapper=True needs a generator function (one yield)"),
        ({"hookwrapper": True}, "plain", "hookwrapper=True needs a generator function (one yield)"),
        ({"wrapper": True}, "async-gen", "an async generator cannot wrap"),
        ({"wrapper": True, "hookwrapper": True}, "gen", "wrapper=True and hookwrapper=True are mutually exclusive"),
        ({"tryfirst": True, "trylast": True}, "plain", "tryfirst=True and trylast=True contradict each other"),
    ],
)
def test_wrapper_misuse_pluggy_would_reject(opts: dict[str, bool], body: str, says: str) -> None:
    def plain(self: Any, ctx: Any) -> None: ...

    def gen(self: Any, ctx: Any) -> Generator[None, Any, None]:
        yield

    async def async_gen(self: Any, ctx: Any) -> Any:
        yield

    func = {"plain": plain, "gen": gen, "async-gen": async_gen}[body]
    cls = type("P", (Plugin,), {"greenroom_run_start": hookimpl(**opts)(func)})
    problems = problems_of(cls)
    assert [(k, h) for k, h, _ in problems] == [(FailureKind.BAD_HOOK, "greenroom_run_start")]
    assert says in problems[0][2]


def test_an_async_observer_is_refused_at_load_whichever_way_it_comes() -> None:
    """Events are delivered as they happen, where nothing can wait: an ``async def``
    ``greenroom_event`` fails its plugin alone, when it loads, never the run."""

    class AsyncObserver(Plugin):
        name = "async-observer"

        @hookimpl
        async def greenroom_event(self, ctx: Any, event: Any) -> None: ...

    ((kind, hook, detail),) = problems_of(AsyncObserver)
    assert (kind, hook) == (FailureKind.BAD_HOOK, "greenroom_event")
    assert detail.startswith("is an 'async def', but events are delivered as they happen")
    # given as an instance, or as a record nobody checked: the same named refusal
    with pytest.raises(PluginStartError, match="hook greenroom_event: is an 'async def'") as given:
        make_plugin_host(records=[], extra=[AsyncObserver()])
    assert given.value.failure.kind is FailureKind.BAD_HOOK
    record = PluginRecord("async-observer", "d", "1", "async-observer = m:AsyncObserver", cls=AsyncObserver)
    with pytest.raises(PluginStartError, match="greenroom_event is an 'async def'"):
        make_plugin_host(records=[record], enable=["async-observer"])


def test_a_method_named_like_a_hook_without_hookimpl_fails() -> None:
    class Forgot(Plugin):
        def greenroom_run_start(self, ctx: Any) -> None: ...

        @hookspec
        def greenroom_run_end(self, ctx: Any, outcome: Any) -> None: ...

        def greenroom_helper(self) -> None: ...

    assert problems_of(Forgot) == [
        (
            FailureKind.UNMARKED_HOOK,
            "greenroom_helper",
            "is named like a hook but has no @hookimpl, and no such hook is declared",
        ),
        (
            FailureKind.UNMARKED_HOOK,
            "greenroom_run_end",
            "is decorated with @hookspec; an implementation needs @hookimpl",
        ),
        (FailureKind.UNMARKED_HOOK, "greenroom_run_start", "has no @hookimpl, so it would never be called"),
    ]


def test_every_problem_pluggy_rejects_is_found_first() -> None:
    """Whatever pluggy would refuse at registration the checks refuse at load, so a
    PluginValidationError can never reach a host."""

    class Wrong(Plugin):
        @hookimpl
        def greenroom_run_start(self, ctx: Any, requst: Any) -> None: ...

    class NotGenerator(Plugin):
        @hookimpl(wrapper=True)
        def greenroom_run_start(self, ctx: Any) -> None: ...

    for cls in (Wrong, NotGenerator):
        pm = pluggy.PluginManager("greenroom")
        pm.add_hookspecs(core_hookspecs)
        with pytest.raises(pluggy.PluginValidationError):
            pm.register(cls())
        assert problems_of(cls)


def test_plugin_declared_hooks_are_implementable_and_checked() -> None:
    class Specs:
        @hookspec
        def greenroom_profile_exported(self, agent_id: str) -> None:
            """A plugin's own hook."""

        @hookspec(historic=True)
        def greenroom_profile_ready(self, store: Any) -> None:
            """Replayed to late registrations."""

    catalog, problems = add_hookspecs(core_catalog(), Specs, "owner")
    assert problems == [] and catalog.specs["greenroom_profile_exported"].args == ("agent_id",)
    assert add_hookspecs(catalog, Specs, "sibling")[1] == []  # two plugins of one package may share them

    class Implementer(Plugin):
        @hookimpl
        def greenroom_profile_exported(self, agent_id: str) -> None: ...

        @hookimpl(wrapper=True)
        def greenroom_profile_ready(self, store: Any) -> Generator[None, Any, Any]:
            return (yield)

        @hookimpl
        def greenroom_profile_exportd(self, agent_id: str) -> None: ...

    found = {(p.kind, p.hook): p.detail for p in check_hooks(Implementer, catalog)}
    assert found == {
        (FailureKind.BAD_HOOK, "greenroom_profile_ready"): "wrapper=True: a historic hook cannot be wrapped",
        (
            FailureKind.UNKNOWN_HOOK,
            "greenroom_profile_exportd",
        ): "no such hook is declared (did you mean greenroom_profile_exported?)",
    }
    assert check_hooks(Implementer, core_catalog())[0].kind is FailureKind.UNKNOWN_HOOK  # without the declarer


def test_unusable_hookspecs_are_refused_without_touching_the_catalog() -> None:
    class Clash:
        @hookspec
        def greenroom_run_start(self, ctx: Any) -> None: ...

    catalog = core_catalog()
    for source, says in (
        (Clash, "already declared by greenroom"),
        (types.SimpleNamespace(), "must be a module or a class"),
        (type("Empty", (), {}), "did not find any 'greenroom' hooks"),
    ):
        after, problems = add_hookspecs(catalog, source, "p")
        assert after is catalog
        assert [p.kind for p in problems] == [FailureKind.BAD_HOOKSPECS] and says in str(problems[0])


def test_config_class_must_be_attrs_with_a_derivable_schema() -> None:
    @dataclasses.dataclass
    class DataConfig:
        level: int = 1

    @attrs.frozen
    class Weird:
        when: type = int  # no JSON Schema for a type object

    class Dataclassy(Plugin):
        config_class = DataConfig

    class Underivable(Plugin):
        config_class = Weird

    class NotASchema(Plugin):
        @classmethod
        def config_schema(cls) -> Any:
            return ["level"]

    (p,) = check_config_class(Dataclassy)
    assert p.kind is FailureKind.BAD_CONFIG_CLASS and "is a dataclass, not an attrs class" in p.detail
    (p,) = check_config_class(Underivable)
    assert p.kind is FailureKind.BAD_CONFIG_CLASS and p.detail.startswith("config_schema() raised")
    (p,) = check_config_class(NotASchema)
    assert p.detail == "config_schema() returned list, not a table"
    assert check_config_class(Plugin) == []


def test_first_party_plugins_pass_every_check() -> None:
    first_party = [r for r in discover() if r.distribution == "greenroom"]
    assert first_party and all(r.failure is None for r in first_party), [str(r.failure) for r in first_party]
