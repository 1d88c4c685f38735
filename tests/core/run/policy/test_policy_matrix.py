"""The policy matrix: every path a hidden tool could leak by x every tool source x where
the policy comes from (``[tools.policy]`` or a plugin's ``greenroom_hidden_tools``) x a
fresh or a resumed session. Each cell asserts on a shared run of its (origin, session),
so the 200-odd cells cost eight agent runs."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from support.policy_harness import GROUP_OF, MARKER, SOURCES, VISIBLE, Transcript, hidden_in, run_case

pytest.importorskip("mcp", reason="the matrix drives a real MCP server")

ORIGINS = ("config", "plugin")
SESSIONS = ("fresh", "resumed")
_RUNS: dict[tuple[str, str, str], Transcript] = {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str, str], Transcript]:
    home = tmp_path_factory.mktemp("policy-home")

    def get(origin: str, session: str, strategy: str = "dispatch") -> Transcript:
        key = (origin, session, strategy)
        if key not in _RUNS:
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("GREENROOM_HOME", str(home / "-".join(key)))
                _RUNS[key] = run_case(home / "-".join(key) / "work", origin, session, strategy)
        return _RUNS[key]

    return get


def result(t: Transcript, call_id: str) -> tuple[str, bool]:
    return t.results[call_id]


# -------------------------------------------------------------------- one check per path


def sent_tools(t: Transcript, src: str, name: str) -> None:
    for r in t.requests:
        assert name not in {d.name for d in r.tools}


def listing(t: Transcript, src: str, name: str) -> None:
    for r in t.requests:
        assert name not in r.system_text and MARKER not in r.system_text
    assert any("srv__read" in r.system_text or "grp_read" in r.system_text for r in t.requests)


def group_section(t: Transcript, src: str, name: str) -> None:
    for r in t.requests:
        for line in r.system_text.splitlines():
            assert name not in line
            if line.startswith(("- `grp`", "- `mcp:srv`")):
                assert line.endswith("(1 tools)"), line  # the hidden tool is not counted


def search_keywords(t: Transcript, src: str, name: str) -> None:
    event = t.search("delete all records")
    assert not hidden_in(n for n, _ in event.results)  # type: ignore[attr-defined]
    text, _ = result(t, "search")
    assert name not in text and MARKER not in text


def search_select(t: Transcript, src: str, name: str) -> None:
    event = t.search("select:")
    assert not hidden_in(n for n, _ in event.results)  # type: ignore[attr-defined]
    text, _ = result(t, "select")
    assert MARKER not in text and '"parameters"' not in text  # no schema of any of them


def search_required(t: Transcript, src: str, name: str) -> None:
    event = t.search("+delete")
    assert not hidden_in(n for n, _ in event.results)  # type: ignore[attr-defined]
    text, _ = result(t, "required")
    assert name not in text and MARKER not in text


def search_browse(t: Transcript, src: str, name: str) -> None:
    text, _ = result(t, "browse")
    assert name not in text and MARKER not in text
    assert any(v in text for v in VISIBLE)  # browsing works, without the hidden ones


def load_tools(t: Transcript, src: str, name: str) -> None:
    for call_id in ("load-group", "load-mcp"):
        text, is_error = result(t, call_id)
        answer = json.loads(text)
        assert not is_error and answer["tool_names"], text
        assert name not in answer["tool_names"] and MARKER not in text
    # an empty list is left out of a JSON result (compaction): no tool of that name loaded
    for call_id in ("load-named-group", "load-named-mcp"):
        text, _ = result(t, call_id)
        answer = json.loads(text)
        assert answer.get("tool_names", []) == [] and MARKER not in text
        if src in GROUP_OF and GROUP_OF[src] == answer["group_id"]:
            assert answer["error"] == f"not in {GROUP_OF[src]}: {name}"


def direct_call(t: Transcript, src: str, name: str) -> None:
    text, is_error = result(t, f"direct-{src}")
    assert is_error and f"no tool named {name!r}" in text
    assert name not in t.marks


def dispatcher_call(t: Transcript, src: str, name: str) -> None:
    text, is_error = result(t, f"dispatch-{src}")
    assert is_error and f"no tool named {name!r}" in text
    assert name not in t.marks


def implicit_group_load(t: Transcript, src: str, name: str) -> None:
    # at the start of steps 2-5 (after the direct calls, the dispatched calls, the
    # searches and the misspelled calls): nothing was loaded for a hidden tool
    for step in t.loaded[1:5]:
        assert not any(step.values()), step
    assert name not in t.marks


def call_after_load(t: Transcript, src: str, name: str) -> None:
    assert t.loaded[-1].get("grp") and t.loaded[-1].get("mcp:srv")  # the groups are loaded now
    for call_id in (f"after-load-{src}", f"after-load-dispatch-{src}"):
        text, is_error = result(t, call_id)
        assert is_error and f"no tool named {name!r}" in text
    assert name not in t.marks


def suggestions(t: Transcript, src: str, name: str) -> None:
    text, is_error = result(t, f"suggest-{src}")
    assert is_error and name not in text


def nothing_model_facing(t: Transcript, src: str, name: str) -> None:
    assert MARKER not in t.model_saw()


def stable_prefix(t: Transcript, src: str, name: str) -> None:
    # the tools array and system prompt are the same on every step (a resumed session's
    # second run included): a rebuild happens once, before the first step
    prefixes = {(r.system_text, tuple(d.name for d in r.tools)) for r in t.requests}
    assert len(prefixes) == 1
    assert len(t.kinds("listing_rebuilt")) <= 1


PATHS: dict[str, Callable[[Transcript, str, str], None]] = {
    "tools-array": sent_tools,
    "listing": listing,
    "group-section": group_section,
    "search-keywords": search_keywords,
    "search-select": search_select,
    "search-required": search_required,
    "search-browse": search_browse,
    "load-tools": load_tools,
    "direct-call": direct_call,
    "dispatcher": dispatcher_call,
    "implicit-load": implicit_group_load,
    "call-after-load": call_after_load,
    "suggestions": suggestions,
    "model-facing-text": nothing_model_facing,
    "stable-prefix": stable_prefix,
}


@pytest.mark.slow
@pytest.mark.parametrize("session", SESSIONS)
@pytest.mark.parametrize("origin", ORIGINS)
@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("path", list(PATHS))
def test_hidden_tool_never_leaks(
    runs: Callable[[str, str, str], Transcript], path: str, source: str, origin: str, session: str
) -> None:
    PATHS[path](runs(origin, session, "dispatch"), source, SOURCES[source])


@pytest.mark.slow
@pytest.mark.parametrize("session", SESSIONS)
@pytest.mark.parametrize("origin", ORIGINS)
@pytest.mark.parametrize("source", list(SOURCES))
def test_hidden_tool_is_not_offered_to_a_hosted_search(
    runs: Callable[[str, str, str], Transcript], source: str, origin: str, session: str
) -> None:
    t = runs(origin, session, "native")
    name = SOURCES[source]
    assert t.requests
    for r in t.requests:
        assert name not in {d.name for d in r.tools} and name not in r.deferred
        assert set(VISIBLE) <= {d.name for d in r.tools}  # the rest is offered


@pytest.mark.slow
@pytest.mark.parametrize("origin", ORIGINS)
@pytest.mark.parametrize("strategy", ("dispatch", "native"))
def test_a_resumed_session_is_rebuilt_once_and_says_why(
    runs: Callable[[str, str, str], Transcript], origin: str, strategy: str
) -> None:
    t = runs(origin, "resumed", strategy)
    (event,) = t.kinds("listing_rebuilt")
    assert set(event.hidden) == set(SOURCES.values()) and event.count == 4  # type: ignore[attr-defined]
    assert "listing rebuilt: now hidden" in event.describe()


@pytest.mark.slow
def test_the_hook_sees_every_source_before_anything_loads(runs: Callable[[str, str, str], Transcript]) -> None:
    t = runs("plugin", "fresh", "dispatch")
    first = set(t.hook_saw[0])
    assert set(SOURCES.values()) | set(VISIBLE) <= first  # group and MCP tools included, not loaded yet
    assert "srv__delete_all" not in t.marks and "grp_delete_all" not in t.marks
