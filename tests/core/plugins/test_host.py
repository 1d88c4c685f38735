"""PluginHost: async implementations keep pluggy's calling semantics (order, firstresult,
old- and new-style wrappers), every failure names its plugin, and ``call_each`` reaches
every plugin when some fail."""

from __future__ import annotations

import functools
import threading
from collections.abc import Generator, Sequence
from typing import Any

import anyio
import pluggy
import pytest

from greenroom import Plugin, PluginHookError, hookimpl
from greenroom.plugins.discovery import make_plugin_host
from greenroom.plugins.host import PluginHost, PluginLoadError

pytestmark = pytest.mark.anyio

SEARCH = {"ctx": None, "query": None, "candidates": (), "rankings": ()}


@pytest.fixture(autouse=True)
def any_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests carry labels through real hooks to watch pluggy's order; the shape of
    answers is held in tests/core/plugins/contract/test_run_contract.py."""
    from greenroom.plugins import answers

    monkeypatch.setattr(answers, "CHECKS", {})


def host_of(*plugins: Plugin) -> PluginHost:
    return make_plugin_host(records=[], extra=plugins)


def named(name: str, **hooks: Any) -> Plugin:
    """A plugin called ``name`` whose hooks are the given (already marked) functions; its
    plain hooks stay on the event loop (``nonblocking``), as these tests watch the order."""
    cls = type(f"P_{name}", (Plugin,), {"name": name, "nonblocking": True, **hooks})
    return cls()


def fuser(answer: list[str] | None, log: list[str], label: str, *, is_async: bool, **marks: Any) -> Any:
    if is_async:

        async def impl(self: Any, ctx: Any, query: Any, candidates: Any, rankings: Any) -> list[str] | None:
            log.append(f"{label}:start")
            await anyio.sleep(0)  # another task may run here; pluggy must still wait
            log.append(f"{label}:end")
            return answer

        return hookimpl(**marks)(impl)

    def sync_impl(self: Any, ctx: Any, query: Any, candidates: Any, rankings: Any) -> list[str] | None:
        log.append(label)
        return answer

    return hookimpl(**marks)(sync_impl)


def new_style(log: list[str], label: str) -> Any:
    @hookimpl(wrapper=True)
    def greenroom_search_tools(self: Any, ctx: Any, query: Any, candidates: Any, rankings: Any) -> Generator:
        log.append(f"{label}:before")
        answer = yield
        log.append(f"{label}:saw {answer}")
        return [*(answer or []), label]

    return greenroom_search_tools


def old_style(log: list[str], label: str) -> Any:
    @hookimpl(hookwrapper=True)
    def greenroom_search_tools(self: Any, ctx: Any, query: Any, candidates: Any, rankings: Any) -> Generator:
        log.append(f"{label}:before")
        outcome = yield
        log.append(f"{label}:saw {outcome.get_result()}")
        outcome.force_result([*(outcome.get_result() or []), label])

    return greenroom_search_tools


def plugins_for(log: list[str], *, with_async: bool) -> list[Plugin]:
    """Two wrappers around two tryfirst implementations that abstain (the second one
    async, and waiting on the event loop), one that answers, and a trylast one pluggy never
    reaches (firstresult)."""
    return [
        named("late", greenroom_search_tools=fuser(["late"], log, "late", is_async=False, trylast=True)),
        named("answers", greenroom_search_tools=fuser(["answers"], log, "answers", is_async=False)),
        named("abstains", greenroom_search_tools=fuser(None, log, "abstains", is_async=with_async, tryfirst=True)),
        named("first", greenroom_search_tools=fuser(None, log, "first", is_async=False, tryfirst=True)),
        named("new", greenroom_search_tools=new_style(log, "new")),
        named("old", greenroom_search_tools=old_style(log, "old")),
    ]


def pluggy_reference(log: list[str]) -> Any:
    """The same plugins called by pluggy alone, every implementation sync."""
    pm = pluggy.PluginManager("greenroom")
    from greenroom import hookspecs

    pm.add_hookspecs(hookspecs)
    for p in plugins_for(log, with_async=False):
        pm.register(p, name=p.name)
    return pm.hook.greenroom_search_tools(**SEARCH)


async def test_an_async_implementation_keeps_pluggys_order_firstresult_and_wrappers() -> None:
    expected_log: list[str] = []
    expected = pluggy_reference(expected_log)
    log: list[str] = []
    host = host_of(*plugins_for(log, with_async=True))
    answer = await host.call_first("greenroom_search_tools", **SEARCH)
    assert answer == expected == ["answers", "new", "old"]  # wrappers saw the answer and changed it
    order = [
        "old:before",
        "new:before",
        "first",
        "abstains",
        "answers",
        "new:saw ['answers']",
        "old:saw ['answers', 'new']",
    ]
    assert expected_log == order
    # the same calls in the same order, each once, and the async one finished before the next started
    i = order.index("abstains")
    assert log == [*order[:i], "abstains:start", "abstains:end", *order[i + 1 :]]


async def test_an_async_implementation_finishes_before_a_later_sync_one_runs() -> None:
    log: list[str] = []
    early_started, other_ran = anyio.Event(), anyio.Event()

    class Early(Plugin):
        name = "early"

        @hookimpl(tryfirst=True)
        async def greenroom_run_start(self, ctx: Any) -> str:
            log.append("early:start")
            early_started.set()
            with anyio.fail_after(5):
                await other_ran.wait()  # the loop runs another task meanwhile
            log.append("early:end")
            return "early"

    class Late(Plugin):
        name = "late"

        @hookimpl
        def greenroom_run_start(self, ctx: Any) -> str:
            log.append("late")
            return "late"

    async def other() -> None:
        with anyio.fail_after(5):
            await early_started.wait()
        log.append("other task")
        other_ran.set()

    host = host_of(Late(), Early())
    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        answers = await host.call("greenroom_run_start", ctx=None)
    assert answers == ["early", "late"]
    assert log == ["early:start", "other task", "early:end", "late"]


async def test_a_nonblocking_plugin_runs_on_the_event_loop_thread() -> None:
    """A plugin that says its plain hooks never block keeps the thread it has in a plain
    call (SQLite connections and asyncio objects are bound to it), also when a hook has
    async implementations; async implementations and wrappers always do."""
    loop_thread = threading.get_ident()
    threads: dict[str, int] = {}

    class Sync(Plugin):
        name = "sync"
        nonblocking = True

        @hookimpl
        def greenroom_run_start(self, ctx: Any) -> None:
            threads["sync"] = threading.get_ident()

        @hookimpl(wrapper=True)
        def greenroom_after_inference(self, ctx: Any, response: Any) -> Generator:
            threads["wrapper setup"] = threading.get_ident()
            yield
            threads["wrapper teardown"] = threading.get_ident()

    class Async(Plugin):
        name = "async"

        @hookimpl
        async def greenroom_run_start(self, ctx: Any) -> None:
            threads["async"] = threading.get_ident()

        @hookimpl
        async def greenroom_after_inference(self, ctx: Any, response: Any) -> None:
            return None

    host = host_of(Sync(), Async())
    await host.call("greenroom_run_start", ctx=None)
    await host.call("greenroom_after_inference", ctx=None, response=None)
    assert threads == dict.fromkeys(["sync", "async", "wrapper setup", "wrapper teardown"], loop_thread)


async def test_a_plain_hook_of_any_other_plugin_runs_in_a_worker_thread_in_order() -> None:
    loop_thread = threading.get_ident()
    seen: list[tuple[str, bool]] = []

    class Blocking(Plugin):
        name = "blocking"

        @hookimpl(tryfirst=True)
        def greenroom_run_start(self, ctx: Any) -> None:
            seen.append(("blocking", threading.get_ident() == loop_thread))

        @hookimpl
        def greenroom_cli_commands(self, app: Any) -> None:  # a contribution hook: called where it is
            seen.append(("contribution", threading.get_ident() == loop_thread))

    class Later(Plugin):
        name = "later"
        nonblocking = True

        @hookimpl(trylast=True)
        def greenroom_run_start(self, ctx: Any) -> None:
            seen.append(("later", threading.get_ident() == loop_thread))

    host = host_of(Blocking(), Later())
    await host.call("greenroom_run_start", ctx=None)
    host.call_sync("greenroom_cli_commands", app=None)
    assert seen == [("blocking", False), ("later", True), ("contribution", True)]


async def test_an_async_implementation_may_call_a_hook_with_async_implementations() -> None:
    class Ranker(Plugin):
        name = "ranker"

        @hookimpl
        async def greenroom_rank_tools(self, ctx: Any, query: Any, candidates: Any) -> str:
            await anyio.sleep(0)
            return "ranked"

    host: PluginHost

    class Starter(Plugin):
        name = "starter"

        @hookimpl
        async def greenroom_run_start(self, ctx: Any) -> Sequence[str]:
            return list(await host.call("greenroom_rank_tools", ctx=None, query=None, candidates=()))

    host = host_of(Ranker(), Starter())
    assert await host.call("greenroom_run_start", ctx=None) == [["ranked"]]


async def test_concurrent_calls_of_one_hook_keep_their_own_answers() -> None:
    """Two tool calls resolve at once: each call's record is its own."""
    release = anyio.Event()

    class Waits(Plugin):
        name = "waits"

        @hookimpl(tryfirst=True)
        async def greenroom_resolve_tool_call(self, ctx: Any, call: Any) -> None:
            with anyio.fail_after(5):
                await release.wait()

    class Echoes(Plugin):
        name = "echoes"

        @hookimpl
        def greenroom_resolve_tool_call(self, ctx: Any, call: Any) -> str:
            return f"resolved {call}"

    host = host_of(Echoes(), Waits())
    answers: dict[str, Any] = {}

    async def resolve(name: str) -> None:
        answers[name] = await host.call_first("greenroom_resolve_tool_call", ctx=None, call=name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(resolve, "a")
        tg.start_soon(resolve, "b")
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert answers == {"a": "resolved a", "b": "resolved b"}


async def test_a_hook_an_implementation_calls_is_a_call_of_its_own() -> None:
    counter = iter(range(100))

    class Counts(Plugin):
        name = "counts"

        @hookimpl
        def greenroom_model_providers(self) -> dict[str, Any]:
            return {"n": next(counter)}

    seen: list[Any] = []
    host: PluginHost

    class Asks(Plugin):
        name = "asks"

        @hookimpl
        def greenroom_run_start(self, ctx: Any) -> None:
            seen.extend(host.call_sync("greenroom_model_providers") for _ in range(2))

    class Waits(Plugin):
        name = "waits"

        @hookimpl(tryfirst=True)
        async def greenroom_run_start(self, ctx: Any) -> None:
            await anyio.sleep(0)

    host = host_of(Counts(), Asks(), Waits())
    await host.call("greenroom_run_start", ctx=None)
    assert seen == [[{"n": 0}], [{"n": 1}]]  # each nested call ran; none answered from the outer record


async def test_an_async_implementation_behind_a_plain_decorator_is_awaited() -> None:
    def traced(function: Any) -> Any:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            return function(*args, **kwargs)  # the coroutine, as the decorated function gives it

        return call

    class Decorated(Plugin):
        name = "decorated"

        @hookimpl
        @traced
        async def greenroom_search_tools(self, ctx: Any, query: Any, candidates: Any, rankings: Any) -> list[str]:
            await anyio.sleep(0)
            return ["decorated"]

    assert await host_of(Decorated()).call("greenroom_search_tools", **SEARCH) == ["decorated"]


async def test_cancelling_a_call_cancels_the_async_implementation_and_wrappers_see_it() -> None:
    started, cleaned = anyio.Event(), anyio.Event()
    seen: list[type[BaseException]] = []

    class Watcher(Plugin):
        name = "watcher"

        @hookimpl(wrapper=True)
        def greenroom_run_start(self, ctx: Any) -> Generator:
            try:
                return (yield)
            except BaseException as exc:
                seen.append(type(exc))
                raise

    class Slow(Plugin):
        name = "slow"

        @hookimpl
        async def greenroom_run_start(self, ctx: Any) -> None:
            started.set()
            try:
                await anyio.sleep_forever()
            finally:
                cleaned.set()

    host = host_of(Slow(), Watcher())
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: host.call("greenroom_run_start", ctx=None))
            await started.wait()
            tg.cancel_scope.cancel()
    assert cleaned.is_set()
    assert seen == [anyio.get_cancelled_exc_class()]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_failure_names_plugin_distribution_and_hook_and_wrappers_see_it(is_async: bool) -> None:
    seen: list[BaseException] = []

    class Watcher(Plugin):
        name = "watcher"

        @hookimpl(wrapper=True)
        def greenroom_run_start(self, ctx: Any) -> Generator:
            try:
                return (yield)
            except BaseException as exc:
                seen.append(exc)
                raise

    if is_async:

        async def fail(self: Any, ctx: Any) -> None:
            await anyio.sleep(0)  # fails after waiting on the event loop
            raise ValueError("boom")

    else:

        def fail(self: Any, ctx: Any) -> None:  # type: ignore[misc]
            raise ValueError("boom")

    host = host_of(named("failing", greenroom_run_start=hookimpl(fail)), Watcher())
    with pytest.raises(PluginHookError) as info:
        await host.call("greenroom_run_start", ctx=None)
    err = info.value
    assert (err.plugin, err.hook, err.reason) == ("failing", "greenroom_run_start", "ValueError: boom")
    assert "(not installed)" in err.distribution
    assert seen == [err]  # the wrapper saw the named error and passed it on


@pytest.mark.parametrize("when", ["setup", "teardown"])
@pytest.mark.parametrize("style", ["wrapper", "hookwrapper"])
@pytest.mark.filterwarnings("ignore::pluggy.PluggyTeardownRaisedWarning")  # pluggy's note on old-style teardowns
async def test_a_wrapper_that_raises_is_named(style: str, when: str) -> None:
    def wrapping(self: Any, ctx: Any) -> Generator:
        if when == "setup":
            raise KeyError("in the wrapper")
        yield
        raise KeyError("in the wrapper")

    class Async(Plugin):
        name = "async"

        @hookimpl
        async def greenroom_run_start(self, ctx: Any) -> str:
            await anyio.sleep(0)
            return "ok"

    host = host_of(Async(), named("wrapping", greenroom_run_start=hookimpl(**{style: True})(wrapping)))
    with pytest.raises(PluginHookError) as info:
        await host.call("greenroom_run_start", ctx=None)
    assert (info.value.plugin, info.value.reason) == ("wrapping", "KeyError: 'in the wrapper'")


async def test_call_each_reaches_every_plugin_and_returns_the_failures() -> None:
    reached: list[str] = []

    class Raises(Plugin):
        name = "raises"

        @hookimpl(tryfirst=True)
        def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
            reached.append("raises")
            raise RuntimeError("could not save")

    class AsyncRaises(Plugin):
        name = "async-raises"

        @hookimpl(tryfirst=True)
        async def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
            reached.append("async-raises")
            await anyio.sleep(0)
            raise OSError("disk full")

    class BrokenWrapper(Plugin):
        name = "broken-wrapper"

        @hookimpl(wrapper=True)
        def greenroom_run_end(self, ctx: Any, outcome: Any) -> Generator:
            raise KeyError("wrapper")
            yield

    class Saves(Plugin):
        name = "saves"

        @hookimpl(trylast=True)
        def greenroom_run_end(self, ctx: Any, outcome: Any) -> str:
            reached.append("saves")
            return "saved"

    host = host_of(Saves(), Raises(), AsyncRaises(), BrokenWrapper())
    answers, failures = await host.call_each("greenroom_run_end", ctx=None, outcome=None)
    assert answers == ["saved"]
    assert sorted(reached) == ["async-raises", "raises", "saves"]
    assert sorted((f.plugin, f.reason) for f in failures) == [
        ("async-raises", "OSError: disk full"),
        ("broken-wrapper", "KeyError: 'wrapper'"),
        ("raises", "RuntimeError: could not save"),
    ]
    # outside call_each the same hook raises the first failure, as pluggy would
    with pytest.raises(PluginHookError):
        await host.call("greenroom_run_end", ctx=None, outcome=None)


def test_a_contribution_hook_written_async_is_refused_by_name() -> None:
    class P(Plugin):
        name = "eager-async"

        @hookimpl
        async def greenroom_model_providers(self) -> dict[str, Any]:
            return {}

    host = host_of(P())
    with pytest.raises(PluginLoadError, match=r"plugin 'eager-async' .*greenroom_model_providers as 'async def', but"):
        host.call_sync("greenroom_model_providers")
